package workspace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// sniffBytes is how much of a file is checked for NUL bytes, as git does.
const sniffBytes = 8000

type readFileArgs struct {
	Path   string `json:"path" jsonschema:"file path, relative to the workspace root"`
	Offset int    `json:"offset,omitempty" jsonschema:"first line to return, counting from 1; defaults to 1"`
	Limit  int    `json:"limit,omitempty" jsonschema:"most lines to return; defaults to as many as fit in one page"`
}

// readFile returns a page of a file, its lines numbered.
func (k *Toolkit) readFile(ctx context.Context, args readFileArgs) (string, error) {
	if args.Offset < 0 || args.Limit < 0 {
		return "", errors.New("offset and limit must not be negative")
	}
	t, err := k.resolve(args.Path)
	if err != nil {
		return "", err
	}
	f, err := k.openText(t, args.Path)
	if err != nil {
		return "", err
	}
	defer f.Close()

	first := max(args.Offset, 1)
	reader := bufio.NewReaderSize(f, 64*1024)
	if err := rejectBinary(reader, args.Path); err != nil {
		return "", err
	}
	var page strings.Builder
	lineNo, shown := 0, 0
	more := false
	for {
		line, clipped, ok, err := readLine(reader, k.maxReadBytes)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", args.Path, err)
		}
		if !ok {
			break
		}
		lineNo++
		if lineNo < first {
			continue
		}
		if (args.Limit > 0 && shown == args.Limit) || ctx.Err() != nil {
			more = true
			break
		}
		numbered := formatLine(lineNo, line, clipped)
		if page.Len()+len(numbered) > k.maxReadBytes {
			if shown > 0 {
				more = true
				break
			}
			// A single line larger than a page: show what fits.
			numbered = formatLine(lineNo, clipUTF8(line, k.maxReadBytes-len(formatLine(lineNo, nil, true))), true)
		}
		page.WriteString(numbered)
		shown++
	}
	switch {
	case lineNo == 0:
		return fmt.Sprintf("(%s is empty)", args.Path), nil
	case shown == 0:
		return "", fmt.Errorf("offset %d is past the end of %s, which has %d lines", first, args.Path, lineNo)
	case more:
		last := first + shown - 1
		fmt.Fprintf(&page, "[showing lines %d-%d; %s continues: call read_file with offset=%d]", first, last, args.Path, last+1)
	}
	return strings.TrimSuffix(page.String(), "\n"), nil
}

// openText opens a regular file for reading.
func (k *Toolkit) openText(t target, name string) (*os.File, error) {
	info, err := os.Stat(t.abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("file not found: %s", name)
	}
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return nil, fmt.Errorf("%s is a directory: use %s", name, ListFilesName)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	return os.Open(t.abs)
}

// rejectBinary refuses content with a NUL byte near its start.
func rejectBinary(reader *bufio.Reader, name string) error {
	head, err := reader.Peek(sniffBytes)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return fmt.Errorf("%s is a binary file", name)
	}
	return nil
}

// formatLine numbers a line as cat -n does.
func formatLine(lineNo int, line []byte, clipped bool) string {
	var b strings.Builder
	number := strconv.Itoa(lineNo)
	b.WriteString(strings.Repeat(" ", max(0, 6-len(number))))
	b.WriteString(number)
	b.WriteByte('\t')
	b.Write(line)
	if clipped {
		b.WriteString(" … [line clipped]")
	}
	b.WriteByte('\n')
	return b.String()
}

// readLine reads one line without its line ending, keeping at most limit
// bytes; clipped reports that the rest was dropped. ok is false at the end of
// the input.
func readLine(reader *bufio.Reader, limit int) (line []byte, clipped, ok bool, err error) {
	for {
		chunk, err := reader.ReadSlice('\n')
		if len(chunk) > 0 {
			ok = true
		}
		if err == nil {
			chunk = bytes.TrimSuffix(bytes.TrimSuffix(chunk, []byte("\n")), []byte("\r"))
		}
		if !clipped {
			if room := limit - len(line); len(chunk) > room {
				line = append(line, clipUTF8(chunk, room)...)
				clipped = true
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case err == nil:
			return line, clipped, true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return line, clipped, ok, nil
		default:
			return nil, false, false, err
		}
	}
}

// clipUTF8 returns at most n bytes of b without splitting a UTF-8 sequence.
func clipUTF8(b []byte, n int) []byte {
	if n >= len(b) {
		return b
	}
	if n <= 0 {
		return nil
	}
	b = b[:n]
	for i := len(b) - 1; i >= 0 && len(b)-i <= utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			return b
		}
	}
	return b
}

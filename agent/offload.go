package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/tool"
)

// Offloading limits, as the reference sets them.
const (
	// DefaultOffloadThreshold is the result size, in characters, above which
	// a result is offloaded.
	DefaultOffloadThreshold = 16_000
	offloadPreviewLines     = 20
	offloadPreviewChars     = 1_200
	offloadMaxBytes         = 8 << 20
	readResultMaxLines      = 400
	readResultMaxChars      = 16_000
	searchResultMaxMatches  = 20
	searchResultMaxContext  = 20
	searchResultLineChars   = 500

	readResultName   = "read_result"
	searchResultName = "search_result"
)

// userKey carries the run's user to the offload tools, which read results
// in that user's scope.
type userKey struct{}

// offloadTools are read_result and search_result, added to an agent that
// offloads large results.
func (a *Agent) offloadTools() ([]tool.Tool, error) {
	read, err := tool.New(tool.Config{Name: readResultName,
		Description: "Read part of a stored tool result by line: offset is the first line (from 0), limit how many lines (at most 400)."},
		func(ctx context.Context, args readResultArgs) (string, error) {
			result, err := a.storedResult(ctx, args.ResultID)
			if err != nil {
				return "", err
			}
			return readLines(result, args.Offset, args.Limit), nil
		})
	if err != nil {
		return nil, err
	}
	search, err := tool.New(tool.Config{Name: searchResultName,
		Description: "Search a stored tool result with a regular expression (RE2 syntax); returns up to 20 matching lines with their numbers and optional context lines."},
		func(ctx context.Context, args searchResultArgs) (string, error) {
			result, err := a.storedResult(ctx, args.ResultID)
			if err != nil {
				return "", err
			}
			return searchLines(result, args.Pattern, args.Context)
		})
	if err != nil {
		return nil, err
	}
	return []tool.Tool{read, search}, nil
}

type readResultArgs struct {
	ResultID string `json:"result_id" jsonschema:"the id from the result envelope"`
	Offset   int    `json:"offset,omitempty" jsonschema:"first line to read, from 0"`
	Limit    int    `json:"limit,omitempty" jsonschema:"how many lines to read (at most 400)"`
}

type searchResultArgs struct {
	ResultID string `json:"result_id" jsonschema:"the id from the result envelope"`
	Pattern  string `json:"pattern" jsonschema:"a regular expression (RE2 syntax)"`
	Context  int    `json:"context,omitempty" jsonschema:"lines of context around each match (at most 20)"`
}

func (a *Agent) storedResult(ctx context.Context, resultID string) (string, error) {
	userID, _ := ctx.Value(userKey{}).(string)
	result, err := a.cfg.Store.GetToolResult(ctx, resultID, userID)
	if err != nil {
		return "", fmt.Errorf("no stored result %q: %w", resultID, err)
	}
	return result.Content, nil
}

// offload stores a result too large for the context and replaces it with an
// envelope. A failed store keeps the head and tail, marked as a failure; the
// run goes on either way.
func (a *Agent) offload(ctx context.Context, st *runState, exec *run.ToolExecution) {
	if !a.cfg.OffloadToolResults || exec.Result == nil || len(*exec.Result) <= a.cfg.OffloadThreshold ||
		exec.ToolName == readResultName || exec.ToolName == searchResultName {
		return
	}
	content := *exec.Result
	truncated := false
	if len(content) > offloadMaxBytes {
		content, truncated = content[:offloadMaxBytes], true
	}
	sum := sha256.Sum256([]byte(st.out.SessionID + "\x00" + st.out.RunID + "\x00" + exec.ToolCallID))
	resultID := "res_" + hex.EncodeToString(sum[:8])
	lines := strings.Count(content, "\n") + 1
	preview := head(content, offloadPreviewLines, offloadPreviewChars)
	err := a.cfg.Store.PutToolResult(ctx, &storage.ToolResult{
		ResultID: resultID, Namespace: st.out.SessionID, Path: st.out.RunID + "/" + exec.ToolCallID,
		SessionID: st.out.SessionID, RunID: st.out.RunID, ToolCallID: exec.ToolCallID, ToolName: exec.ToolName,
		ArgsHash: argsHash(exec.ToolArgs), ContentType: "text/plain", SizeBytes: int64(len(content)), LineCount: int64(lines),
		Preview: preview, UserID: st.out.UserID, CreatedAt: a.cfg.Now().Unix(), Content: content,
	})
	var envelope strings.Builder
	if err != nil {
		a.cfg.Logger.WarnContext(ctx, "offloading a tool result failed", "run_id", st.out.RunID, "tool", exec.ToolName, "error", err)
		fmt.Fprintf(&envelope, "<result tool=%q lines=%d chars=%d offload=\"failed\">\n%s\n…\n%s\n</result>\nThe full result could not be stored (%v); only its head and tail are shown.",
			exec.ToolName, lines, len(*exec.Result), preview, tail(content, offloadPreviewLines, offloadPreviewChars), err)
	} else {
		fmt.Fprintf(&envelope, "<result id=%q tool=%q lines=%d chars=%d>\n%s\n</result>\n", resultID, exec.ToolName, lines, len(*exec.Result), preview)
		if truncated {
			fmt.Fprintf(&envelope, "Only the first %d bytes were stored.\n", offloadMaxBytes)
		}
		fmt.Fprintf(&envelope, "This result is too large to show. Call %s(%q) to read it by line, or %s(%q, pattern) to find lines.", readResultName, resultID, searchResultName, resultID)
	}
	text := envelope.String()
	exec.Result = &text
}

func argsHash(args map[string]any) string {
	sum := sha256.Sum256([]byte(encodeArgs(args)))
	return hex.EncodeToString(sum[:8])
}

// head returns the first lines of s, at most chars characters.
func head(s string, lines, chars int) string {
	end := 0
	for i := 0; i < lines && end < len(s); i++ {
		next := strings.IndexByte(s[end:], '\n')
		if next < 0 {
			end = len(s)
			break
		}
		end += next + 1
	}
	return strings.TrimRight(clip(s[:end], chars), "\n")
}

// tail returns the last lines of s, at most chars characters.
func tail(s string, lines, chars int) string {
	start := len(s)
	for i := 0; i <= lines && start > 0; i++ {
		prev := strings.LastIndexByte(s[:start-1], '\n')
		if prev < 0 {
			start = 0
			break
		}
		start = prev + 1
	}
	t := s[start:]
	if len(t) > chars {
		t = t[len(t)-chars:]
	}
	return strings.TrimRight(t, "\n")
}

func clip(s string, chars int) string {
	if len(s) <= chars {
		return s
	}
	return s[:chars]
}

// readLines returns lines [offset, offset+limit) of content, capped.
func readLines(content string, offset, limit int) string {
	all := strings.Split(content, "\n")
	if limit <= 0 || limit > readResultMaxLines {
		limit = readResultMaxLines
	}
	offset = max(offset, 0)
	if offset >= len(all) {
		return fmt.Sprintf("[no lines: the result has %d lines]", len(all))
	}
	end := min(offset+limit, len(all))
	var b strings.Builder
	fmt.Fprintf(&b, "[lines %d-%d of %d]\n", offset, end-1, len(all))
	for i := offset; i < end; i++ {
		if b.Len()+len(all[i]) > readResultMaxChars {
			fmt.Fprintf(&b, "[stopped at line %d: %d characters per read; continue with offset=%d]", i, readResultMaxChars, i)
			break
		}
		b.WriteString(all[i])
		b.WriteByte('\n')
	}
	return b.String()
}

// searchLines returns the lines of content matching pattern, with context.
// Go's regular expressions run in linear time, so a pattern cannot hang.
func searchLines(content, pattern string, context int) (string, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", fmt.Errorf("pattern %q: %w", pattern, err)
	}
	context = min(max(context, 0), searchResultMaxContext)
	all := strings.Split(content, "\n")
	var b strings.Builder
	matches := 0
	for i, line := range all {
		if !re.MatchString(line) {
			continue
		}
		if matches == searchResultMaxMatches {
			fmt.Fprintf(&b, "[more matches: showing the first %d]\n", searchResultMaxMatches)
			break
		}
		matches++
		for j := max(i-context, 0); j <= min(i+context, len(all)-1); j++ {
			marker := " "
			if j == i {
				marker = ">"
			}
			fmt.Fprintf(&b, "%s%d: %s\n", marker, j, clip(all[j], searchResultLineChars))
		}
		if context > 0 {
			b.WriteString("--\n")
		}
	}
	if matches == 0 {
		return fmt.Sprintf("[no line matches %q]", pattern), nil
	}
	return b.String(), nil
}

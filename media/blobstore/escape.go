package blobstore

import (
	"os"
	"strconv"
	"strings"
)

// Object keys are escaped as gocloud.dev/blob escaped them, so that a blob
// keeps the object name it had when an earlier version wrote it. Blob ids
// ([media.ValidID]) never need escaping; a bucket prefix might.

// hexEscape writes the runes of s that shouldEscape picks as "__0x<hex>__".
// Any text of s that already reads as such an escape has its first rune
// escaped too, so two keys never escape alike.
func hexEscape(s string, shouldEscape func(runes []rune, i int) bool) string {
	runes := []rune(s)
	var escaped strings.Builder
	changed := false
	for i, r := range runes {
		if !shouldEscape(runes, i) && !startsHexEscape(runes, i) {
			escaped.WriteRune(r)
			continue
		}
		changed = true
		escaped.WriteString("__0x")
		escaped.WriteString(strconv.FormatInt(int64(r), 16))
		escaped.WriteString("__")
	}
	if !changed {
		return s
	}
	return escaped.String()
}

// startsHexEscape reports whether the runes from i read as an escape:
// "__0x", hexadecimal digits that fit an int32, "__".
func startsHexEscape(runes []rune, i int) bool {
	const opening = "__0x"
	if len(runes)-i < len(opening) || string(runes[i:i+len(opening)]) != opening {
		return false
	}
	digits := i + len(opening)
	end := digits
	for end < len(runes) && runes[end] != '_' {
		end++
	}
	if end+1 >= len(runes) || runes[end+1] != '_' {
		return false
	}
	_, err := strconv.ParseInt(string(runes[digits:end]), 16, 32)
	return err == nil
}

// escapeS3Key escapes an object key as gocloud.dev's s3blob did: control
// characters, and the slash of "../".
func escapeS3Key(key string) string {
	return hexEscape(key, func(r []rune, i int) bool {
		c := r[i]
		return c < 32 || (i > 1 && c == '/' && r[i-1] == '.' && r[i-2] == '.')
	})
}

// escapeFileKey escapes an object key into a relative file path as
// gocloud.dev's fileblob did: control characters, the slash of "../", a
// repeated or trailing slash, and on Windows the characters its file names
// cannot hold.
func escapeFileKey(key string) string {
	key = hexEscape(key, func(r []rune, i int) bool {
		c := r[i]
		switch {
		case c < 32:
			return true
		case os.PathSeparator != '/' && c == os.PathSeparator:
			return true
		case i > 1 && c == '/' && r[i-1] == '.' && r[i-2] == '.':
			return true
		case i > 0 && c == '/' && r[i-1] == '/':
			return true
		case c == '/' && i == len(r)-1:
			return true
		case os.PathSeparator == '\\' && strings.ContainsRune(`><:"|?*`, c):
			return true
		}
		return false
	})
	if os.PathSeparator != '/' {
		key = strings.ReplaceAll(key, "/", string(os.PathSeparator))
	}
	return key
}

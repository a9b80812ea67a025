package blobstore

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEscapeKeys: keys are escaped as gocloud.dev/blob escaped them, so
// objects it wrote keep their names.
func TestEscapeKeys(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{
		"media/0123abcd":     "media/0123abcd",
		"a_b-c/":             "a_b-c/",
		"tab\there":          "tab__0x9__here",
		"../up/../":          "..__0x2f__up/..__0x2f__",
		"__0x41__":           "__0x5f___0x41__",
		"__0x__ and __0xg__": "__0x__ and __0xg__",
		"été/":               "été/",
	} {
		require.Equal(t, want, escapeS3Key(key), key)
	}
	if os.PathSeparator != '/' {
		t.Skip("file keys are checked where the path separator is /")
	}
	for key, want := range map[string]string{
		"media/0123abcd": "media/0123abcd",
		"a//b/":          "a/__0x2f__b__0x2f__",
		"../x":           "..__0x2f__x",
		"ctl\x01":        "ctl__0x1__",
		"__0x2f__":       "__0x5f___0x2f__",
	} {
		require.Equal(t, want, escapeFileKey(key), key)
	}
}

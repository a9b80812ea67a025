package run_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/run"
)

// TestStoredMediaJSON: a medium kept in a media store travels as the fields
// Agno clients read plus media_id, without content, and reads back as a
// reference.
func TestStoredMediaJSON(t *testing.T) {
	t.Parallel()
	image := run.Image{ID: "img-1", MediaID: "4f2a", MimeType: "image/jpeg", Format: "jpg", Filename: "cat.jpg", Size: 115712}
	data, err := json.Marshal(image)
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"img-1","media_id":"4f2a","format":"jpg","mime_type":"image/jpeg","filename":"cat.jpg","size":115712}`, string(data))
	var back run.Image
	require.NoError(t, json.Unmarshal(data, &back))
	require.Equal(t, image, back)
	require.True(t, back.Stored())

	file := run.File{ID: "f-1", MediaID: "9c1d", URL: "https://cdn.example.com/9c1d", MimeType: "application/pdf", Filename: "a.pdf", Size: 10}
	data, err = json.Marshal(file)
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"f-1","media_id":"9c1d","url":"https://cdn.example.com/9c1d","mime_type":"application/pdf","filename":"a.pdf","size":10}`, string(data))
	var backFile run.File
	require.NoError(t, json.Unmarshal(data, &backFile))
	require.Equal(t, file, backFile)
	require.True(t, backFile.Stored())

	for _, tc := range []struct {
		name string
		json string
		want run.Audio
	}{
		{"stored", `{"media_id":"a1","mime_type":"audio/wav","size":3}`, run.Audio{MediaID: "a1", MimeType: "audio/wav", Size: 3}},
		{"inline", `{"content":"UklG","mime_type":"audio/wav"}`, run.Audio{Content: []byte("RIF"), MimeType: "audio/wav"}},
	} {
		var got run.Audio
		require.NoError(t, json.Unmarshal([]byte(tc.json), &got), tc.name)
		require.Equal(t, tc.want, got, tc.name)
	}
}

// TestStoredReports: only a medium that names a blob and carries no bytes
// is a reference; one whose bytes were read back is not.
func TestStoredReports(t *testing.T) {
	t.Parallel()
	require.False(t, run.Image{}.Stored())
	require.False(t, run.Image{URL: "https://example.com/a.png"}.Stored())
	require.True(t, run.Image{MediaID: "m"}.Stored())
	require.False(t, run.Image{MediaID: "m", Content: []byte("x")}.Stored(), "resolved")
	require.True(t, run.Video{MediaID: "m"}.Stored())
	require.True(t, run.Audio{MediaID: "m"}.Stored())
	require.True(t, run.File{MediaID: "m"}.Stored())

	msg := &run.Message{Role: run.RoleUser, Images: []run.Image{{URL: "https://example.com/a.png"}}}
	require.False(t, msg.StoredMedia())
	msg.Files = []run.File{{MediaID: "m"}}
	require.True(t, msg.StoredMedia())

	var none *run.Input
	require.False(t, none.InlineMedia())
	in := &run.Input{Images: []run.Image{{MediaID: "m"}}}
	require.False(t, in.InlineMedia())
	in.Videos = []run.Video{{Content: []byte("x")}}
	require.True(t, in.InlineMedia())
}

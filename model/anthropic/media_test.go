package anthropic_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeanthropic"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/anthropic"
	"github.com/agnogo/agnogo/run"
)

func TestDocuments(t *testing.T) {
	t.Parallel()
	request := &model.Request{Messages: []*run.Message{{
		Role:    run.RoleUser,
		Content: "Summarise these.",
		Files: []run.File{
			{Filename: "report.pdf", MimeType: "application/pdf", Content: []byte("%PDF-1.7")},
			{URL: "https://example.com/papers/attention.pdf"},
			{Filename: "notes.md", MimeType: "text/markdown; charset=utf-8", Content: []byte("# Notes\n- ship it")},
			{Filename: "data.json", MimeType: "application/octet-stream", Content: []byte(`{"ok":true}`)},
		},
	}}}
	want := `[{"role":"user","content":[
		{"type":"text","text":"Summarise these."},
		{"type":"document","title":"report.pdf","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjc="}},
		{"type":"document","title":"attention.pdf","source":{"type":"url","url":"https://example.com/papers/attention.pdf"}},
		{"type":"document","title":"notes.md","source":{"type":"text","media_type":"text/plain","data":"# Notes\n- ship it"}},
		{"type":"document","title":"data.json","source":{"type":"text","media_type":"text/plain","data":"{\"ok\":true}"}}
	]}]`

	b := setup(t)
	b.srv.Enqueue(fakeanthropic.Text("Done."), fakeanthropic.Text("Done."))
	_, err := b.model.Invoke(t.Context(), request)
	require.NoError(t, err)
	require.NoError(t, collect(t, b.model.Stream(t.Context(), request)).err)
	require.Len(t, b.srv.Requests(), 2)
	for _, sent := range b.srv.Requests() {
		require.JSONEq(t, want, jsonOf(t, sent["messages"]))
	}
}

func TestUnsupportedMediaFailBeforeSending(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		message run.Message
		want    string
	}{
		{
			name:    "audio",
			message: run.Message{Audio: []run.Audio{{ID: "voice-1", Format: "wav", Content: []byte("RIFF")}}},
			want:    `audio "voice-1": Anthropic does not take audio input`,
		},
		{
			name:    "video",
			message: run.Message{Videos: []run.Video{{URL: "https://example.com/clip.mp4"}}},
			want:    `video "https://example.com/clip.mp4": Anthropic does not take video input`,
		},
		{
			name: "office document",
			message: run.Message{Files: []run.File{{
				Filename: "plan.docx", MimeType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", Content: []byte("PK\x03\x04"),
			}}},
			want: `document "plan.docx" (application/vnd.openxmlformats-officedocument.wordprocessingml.document): Anthropic takes ` + model.SupportedDocuments,
		},
		{
			name:    "archive",
			message: run.Message{Files: []run.File{{Filename: "logs.zip", MimeType: "application/zip", Content: []byte("PK\x03\x04")}}},
			want:    `document "logs.zip" (application/zip): Anthropic takes ` + model.SupportedDocuments,
		},
		{
			name:    "text by url",
			message: run.Message{Files: []run.File{{URL: "https://example.com/notes.txt"}}},
			want:    `document "notes.txt" has only a URL: Anthropic takes a text document inline, so give its content`,
		},
		{
			name:    "pdf by file path",
			message: run.Message{Files: []run.File{{Filepath: "/srv/uploads/report.pdf"}}},
			want:    `document "report.pdf" has no content (a file path must be read by the caller)`,
		},
		{
			name:    "text that is not utf-8",
			message: run.Message{Files: []run.File{{Filename: "latin1.txt", MimeType: "text/plain", Content: []byte("caf\xe9")}}},
			want:    `document "latin1.txt" (text/plain) is not UTF-8 text`,
		},
	}
	b := setup(t)
	for _, tc := range cases {
		message := tc.message
		message.Role = run.RoleUser
		message.Content = "What is in it?"
		request := &model.Request{Messages: []*run.Message{&message}}
		_, invokeErr := b.model.Invoke(t.Context(), request)
		streamErr := collect(t, b.model.Stream(t.Context(), request)).err
		for _, err := range []error{invokeErr, streamErr} {
			var modelErr *model.Error
			require.True(t, errors.As(err, &modelErr), "%s: %v", tc.name, err)
			require.Equal(t, model.ClassBadRequest, modelErr.Class, tc.name)
			require.Equal(t, anthropic.Provider, modelErr.Provider, tc.name)
			require.Equal(t, tc.want, modelErr.Message, tc.name)
			require.False(t, model.IsRetryable(err), tc.name)
		}
	}
	require.Empty(t, b.srv.Requests(), "nothing was sent")
}

package openai_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/openai"
	"github.com/agnogo/agnogo/run"
)

// Media contents and their base64 forms as they appear on the wire.
var (
	pdfContent = []byte("%PDF-1.7") // JVBERi0xLjc=
	wavContent = []byte("RIFF\x24\x00\x00\x00WAVEfmt ")
)

const (
	pdfBase64 = "JVBERi0xLjc="
	wavBase64 = "UklGRiQAAABXQVZFZm10IA=="
)

// documentsMessage is a user message with a PDF, a Markdown file and a JSON
// file that the browser sent as application/octet-stream.
func documentsMessage() *run.Message {
	return &run.Message{Role: run.RoleUser, Content: "Summarise these.", Files: []run.File{
		{Filename: "report.pdf", MimeType: "application/pdf", Content: pdfContent},
		{Filename: "notes.md", MimeType: "text/markdown", Content: []byte("# Notes\n- ship it")},
		{Filename: `a "quoted" & <odd>.json`, MimeType: "application/octet-stream", Content: []byte(`{"ok":true}`)},
	}}
}

func TestChatDocumentsAndAudio(t *testing.T) {
	t.Parallel()
	message := documentsMessage()
	message.Audio = []run.Audio{
		{Format: "wav", Content: wavContent},
		{MimeType: "audio/mpeg", Content: []byte("ID3\x04\x00")},
	}
	for _, stream := range []bool{false, true} {
		b := setup(t, openai.APIChat)
		b.srv.Enqueue(fakeopenai.Text("Done."))
		_, err := call(t, b.model, stream, &model.Request{Messages: []*run.Message{message}})
		require.NoError(t, err)
		require.JSONEq(t, `[{"role":"user","content":[
			{"type":"text","text":"Summarise these."},
			{"type":"input_audio","input_audio":{"data":"`+wavBase64+`","format":"wav"}},
			{"type":"input_audio","input_audio":{"data":"SUQzBAA=","format":"mp3"}},
			{"type":"file","file":{"file_data":"data:application/pdf;base64,`+pdfBase64+`","filename":"report.pdf"}},
			{"type":"text","text":"<file name=\"notes.md\">\n# Notes\n- ship it\n</file>"},
			{"type":"text","text":"<file name=\"a &quot;quoted&quot; &amp; &lt;odd>.json\">\n{\"ok\":true}\n</file>"}
		]}]`, jsonOf(t, b.srv.Requests()[0].Body["messages"]))
	}
}

func TestResponsesDocuments(t *testing.T) {
	t.Parallel()
	message := documentsMessage()
	message.Files = append(message.Files, run.File{URL: "https://example.com/papers/attention.pdf"})
	for _, stream := range []bool{false, true} {
		b := setup(t, openai.APIResponses)
		b.srv.Enqueue(fakeopenai.Text("Done."))
		_, err := call(t, b.model, stream, &model.Request{Messages: []*run.Message{message}})
		require.NoError(t, err)
		require.JSONEq(t, `[{"role":"user","content":[
			{"type":"input_text","text":"Summarise these."},
			{"type":"input_file","file_data":"data:application/pdf;base64,`+pdfBase64+`","filename":"report.pdf"},
			{"type":"input_text","text":"<file name=\"notes.md\">\n# Notes\n- ship it\n</file>"},
			{"type":"input_text","text":"<file name=\"a &quot;quoted&quot; &amp; &lt;odd>.json\">\n{\"ok\":true}\n</file>"},
			{"type":"input_file","file_url":"https://example.com/papers/attention.pdf","filename":"attention.pdf"}
		]}]`, jsonOf(t, b.srv.Requests()[0].Body["input"]))
	}
}

func TestUnsupportedMediaFailBeforeSending(t *testing.T) {
	t.Parallel()
	docx := run.File{Filename: "plan.docx", MimeType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", Content: []byte("PK\x03\x04")}
	cases := []struct {
		name    string
		message run.Message
		// want is the error's message on each API; an API missing from it
		// accepts the message.
		want map[string]string
	}{
		{
			name:    "office document",
			message: run.Message{Files: []run.File{docx}},
			want: map[string]string{
				openai.APIChat:      `document "plan.docx" (application/vnd.openxmlformats-officedocument.wordprocessingml.document): Chat Completions takes ` + model.SupportedDocuments,
				openai.APIResponses: `document "plan.docx" (application/vnd.openxmlformats-officedocument.wordprocessingml.document): the Responses API takes ` + model.SupportedDocuments,
			},
		},
		{
			name:    "archive without a mime type",
			message: run.Message{Files: []run.File{{Filename: "logs.zip", Content: []byte("PK\x03\x04")}}},
			want: map[string]string{
				openai.APIChat:      `document "logs.zip" (unknown type): Chat Completions takes ` + model.SupportedDocuments,
				openai.APIResponses: `document "logs.zip" (unknown type): the Responses API takes ` + model.SupportedDocuments,
			},
		},
		{
			name:    "pdf by url",
			message: run.Message{Files: []run.File{{URL: "https://example.com/report.pdf"}}},
			want:    map[string]string{openai.APIChat: `document "report.pdf" has only a URL, which Chat Completions cannot fetch: give its content`},
		},
		{
			name:    "text by url",
			message: run.Message{Files: []run.File{{URL: "https://example.com/notes.md"}}},
			want: map[string]string{
				openai.APIChat:      `document "notes.md" has only a URL: Chat Completions takes a text document inline, so give its content`,
				openai.APIResponses: `document "notes.md" has only a URL: the Responses API takes a text document inline, so give its content`,
			},
		},
		{
			name:    "pdf by file path",
			message: run.Message{Files: []run.File{{Filepath: "/srv/uploads/report.pdf"}}},
			want: map[string]string{
				openai.APIChat:      `document "report.pdf" has no content (a file path must be read by the caller)`,
				openai.APIResponses: `document "report.pdf" has no content (a file path must be read by the caller)`,
			},
		},
		{
			name:    "text that is not utf-8",
			message: run.Message{Files: []run.File{{Filename: "latin1.txt", MimeType: "text/plain", Content: []byte("caf\xe9")}}},
			want: map[string]string{
				openai.APIChat:      `document "latin1.txt" (text/plain) is not UTF-8 text`,
				openai.APIResponses: `document "latin1.txt" (text/plain) is not UTF-8 text`,
			},
		},
		{
			name:    "video",
			message: run.Message{Videos: []run.Video{{ID: "clip-1", MimeType: "video/mp4", Content: []byte("....ftyp")}}},
			want: map[string]string{
				openai.APIChat:      `video "clip-1": Chat Completions does not take video input`,
				openai.APIResponses: `video "clip-1": the Responses API does not take video input`,
			},
		},
		{
			name:    "wav audio",
			message: run.Message{Audio: []run.Audio{{ID: "voice-1", Format: "wav", Content: wavContent}}},
			want:    map[string]string{openai.APIResponses: `audio "voice-1": the Responses API does not take audio input; use Chat Completions (Config.API "chat")`},
		},
		{
			name:    "ogg audio",
			message: run.Message{Audio: []run.Audio{{ID: "voice-2", MimeType: "audio/ogg", Content: []byte("OggS")}}},
			want: map[string]string{
				openai.APIChat:      `audio "voice-2" (audio/ogg): Chat Completions takes wav or mp3 audio`,
				openai.APIResponses: `audio "voice-2": the Responses API does not take audio input; use Chat Completions (Config.API "chat")`,
			},
		},
		{
			name:    "audio by url",
			message: run.Message{Audio: []run.Audio{{URL: "https://example.com/voice.mp3"}}},
			want: map[string]string{
				openai.APIChat:      `audio "https://example.com/voice.mp3" has no content: Chat Completions takes audio inline (a URL or file path must be read by the caller)`,
				openai.APIResponses: `audio "https://example.com/voice.mp3": the Responses API does not take audio input; use Chat Completions (Config.API "chat")`,
			},
		},
	}
	forEachMode(t, func(t *testing.T, api string, stream bool) {
		b := setup(t, api)
		for _, tc := range cases {
			want, rejected := tc.want[api]
			if !rejected {
				continue
			}
			message := tc.message
			message.Role = run.RoleUser
			message.Content = "What is in it?"
			_, err := call(t, b.model, stream, &model.Request{Messages: []*run.Message{&message}})
			var modelErr *model.Error
			require.True(t, errors.As(err, &modelErr), "%s: %v", tc.name, err)
			require.Equal(t, model.ClassBadRequest, modelErr.Class, tc.name)
			require.Equal(t, openai.DefaultProvider, modelErr.Provider, tc.name)
			require.Equal(t, want, modelErr.Message, tc.name)
			require.False(t, model.IsRetryable(err), tc.name)
		}
		require.Empty(t, b.srv.Requests(), "nothing is sent")
	})
}

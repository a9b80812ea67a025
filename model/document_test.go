package model_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
)

func TestDocumentOf(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		file run.File
		want model.Document
	}{
		{
			name: "pdf by mime type",
			file: run.File{Filename: "report.pdf", MimeType: "application/pdf"},
			want: model.Document{Name: "report.pdf", MIMEType: "application/pdf", Kind: model.DocumentPDF},
		},
		{
			name: "text with parameters",
			file: run.File{Filename: "notes.txt", MimeType: "Text/Plain; charset=utf-8"},
			want: model.Document{Name: "notes.txt", MIMEType: "text/plain", Kind: model.DocumentText},
		},
		{
			name: "json",
			file: run.File{Name: "data.json", MimeType: "application/json"},
			want: model.Document{Name: "data.json", MIMEType: "application/json", Kind: model.DocumentText},
		},
		{
			name: "structured syntax suffix",
			file: run.File{Filename: "graph.jsonld", MimeType: "application/ld+json"},
			want: model.Document{Name: "graph.jsonld", MIMEType: "application/ld+json", Kind: model.DocumentText},
		},
		{
			name: "the mime type wins over the extension",
			file: run.File{Filename: "archive.txt", MimeType: "application/zip"},
			want: model.Document{Name: "archive.txt", MIMEType: "application/zip", Kind: model.DocumentUnsupported},
		},
		{
			name: "octet-stream falls back to the extension",
			file: run.File{Filename: "main.GO", MimeType: "application/octet-stream"},
			want: model.Document{Name: "main.GO", MIMEType: "application/octet-stream", Kind: model.DocumentText},
		},
		{
			name: "format before extension",
			file: run.File{Filename: "export", Format: ".CSV"},
			want: model.Document{Name: "export", Kind: model.DocumentText},
		},
		{
			name: "name from a windows file path",
			file: run.File{Filepath: `C:\docs\plan.md`},
			want: model.Document{Name: "plan.md", Kind: model.DocumentText},
		},
		{
			name: "name from a url",
			file: run.File{URL: "https://example.com/papers/attention.pdf?download=1"},
			want: model.Document{Name: "attention.pdf", Kind: model.DocumentPDF},
		},
		{
			name: "sniffed pdf",
			file: run.File{ID: "upload-1", Content: []byte("%PDF-1.7\n")},
			want: model.Document{Name: "upload-1", Kind: model.DocumentPDF},
		},
		{
			name: "sniffed text",
			file: run.File{Content: []byte("just words")},
			want: model.Document{Name: "document", Kind: model.DocumentText},
		},
		{
			name: "office document",
			file: run.File{Filename: "plan.docx", MimeType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
			want: model.Document{Name: "plan.docx", MIMEType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", Kind: model.DocumentUnsupported},
		},
		{
			name: "unknown extension",
			file: run.File{Filename: "slides.key"},
			want: model.Document{Name: "slides.key", Kind: model.DocumentUnsupported},
		},
		{
			name: "nothing to go on",
			file: run.File{},
			want: model.Document{Name: "document", Kind: model.DocumentUnsupported},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, model.DocumentOf(tc.file))
		})
	}
}

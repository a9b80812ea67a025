package model

import (
	"cmp"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/agnogo/agnogo/run"
)

// DocumentKind says how a document ([run.File]) can reach a model.
type DocumentKind int

// The document kinds.
const (
	// DocumentUnsupported is a document no provider reads as such, e.g. an
	// archive or an office file.
	DocumentUnsupported DocumentKind = iota
	// DocumentPDF is a PDF, which providers take as a file or document part.
	DocumentPDF
	// DocumentText is a text document (plain text, Markdown, CSV, JSON, XML,
	// YAML, HTML, source code), which providers take as its text.
	DocumentText
)

// SupportedDocuments names the documents [DocumentOf] accepts, for error
// messages.
const SupportedDocuments = "PDF, or text (plain text, Markdown, CSV, JSON, XML, YAML, HTML, source code)"

// Document is what a provider needs to know to send a [run.File].
type Document struct {
	// Name is what the model is told the document is called: the file's
	// Filename, else its Name, else the last element of its Filepath or URL,
	// else its ID, else "document".
	Name string
	// MIMEType is the file's declared MIME type without parameters, e.g.
	// text/plain; "" when it declares none.
	MIMEType string
	// Kind is how the document can be sent.
	Kind DocumentKind
}

// DocumentOf describes file. Its kind comes from the declared MIME type;
// when that is absent or says nothing (application/octet-stream, which
// browsers send for many text files), from its Format or the extension of
// its name; failing those, from sniffing its content.
func DocumentOf(file run.File) Document {
	document := Document{Name: documentName(file), MIMEType: baseMIMEType(file.MimeType)}
	switch {
	case document.MIMEType != "" && document.MIMEType != "application/octet-stream":
		document.Kind = kindOfMIMEType(document.MIMEType)
	case file.Format != "":
		document.Kind = kindOfExtension(file.Format)
	case path.Ext(document.Name) != "":
		document.Kind = kindOfExtension(path.Ext(document.Name))
	case len(file.Content) > 0:
		document.Kind = kindOfMIMEType(baseMIMEType(http.DetectContentType(file.Content)))
	}
	return document
}

// documentName is the name a file is shown to the model under.
func documentName(file run.File) string {
	name := cmp.Or(file.Filename, file.Name, lastElement(file.Filepath))
	if name == "" && file.URL != "" {
		if parsed, err := url.Parse(file.URL); err == nil {
			name = lastElement(parsed.Path)
		}
	}
	return cmp.Or(name, file.ID, "document")
}

// lastElement is the last element of a slash- or backslash-separated path,
// "" for an empty path or one that ends in a separator.
func lastElement(filePath string) string {
	return filePath[strings.LastIndexAny(filePath, `/\`)+1:]
}

// baseMIMEType lowercases a MIME type and drops its parameters
// (text/plain; charset=utf-8 is text/plain).
func baseMIMEType(mimeType string) string {
	if mimeType == "" {
		return ""
	}
	if base, _, err := mime.ParseMediaType(mimeType); err == nil {
		return base
	}
	return strings.ToLower(strings.TrimSpace(mimeType))
}

// textMIMETypes are the non-text/* MIME types of text documents.
var textMIMETypes = map[string]bool{
	"application/json":       true,
	"application/x-ndjson":   true,
	"application/xml":        true,
	"application/yaml":       true,
	"application/x-yaml":     true,
	"application/toml":       true,
	"application/javascript": true,
	"application/sql":        true,
	"application/x-sh":       true,
}

func kindOfMIMEType(mimeType string) DocumentKind {
	switch {
	case mimeType == "application/pdf":
		return DocumentPDF
	case strings.HasPrefix(mimeType, "text/"), textMIMETypes[mimeType],
		strings.HasPrefix(mimeType, "application/") && (strings.HasSuffix(mimeType, "+json") || strings.HasSuffix(mimeType, "+xml")):
		return DocumentText
	}
	return DocumentUnsupported
}

// textExtensions are the file name extensions of text documents.
var textExtensions = map[string]bool{
	"txt": true, "text": true, "log": true, "md": true, "markdown": true, "rst": true,
	"csv": true, "tsv": true, "json": true, "jsonl": true, "ndjson": true,
	"xml": true, "yaml": true, "yml": true, "toml": true, "ini": true,
	"html": true, "htm": true, "css": true,
	"go": true, "py": true, "js": true, "mjs": true, "ts": true, "tsx": true, "jsx": true,
	"java": true, "kt": true, "c": true, "h": true, "cc": true, "cpp": true, "hpp": true,
	"cs": true, "rs": true, "rb": true, "php": true, "swift": true, "sh": true, "sql": true,
}

// kindOfExtension classifies a format or extension: "pdf", ".pdf" and "PDF"
// alike.
func kindOfExtension(extension string) DocumentKind {
	extension = strings.ToLower(strings.TrimPrefix(extension, "."))
	switch {
	case extension == "pdf":
		return DocumentPDF
	case textExtensions[extension]:
		return DocumentText
	}
	return DocumentUnsupported
}

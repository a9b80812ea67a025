package anthropic

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"unicode/utf8"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
)

// unsupportedInputError is a medium or document of a user message that the
// API cannot take. [requestError] reports it as a bad request.
type unsupportedInputError struct{ reason string }

func (e *unsupportedInputError) Error() string { return e.reason }

func unsupported(format string, args ...any) error {
	return &unsupportedInputError{reason: fmt.Sprintf(format, args...)}
}

// requestError classes a failure to encode a request: input the API cannot
// take is a [model.ClassBadRequest], which no retry can fix. Other failures
// (an unknown role, a broken schema) are the caller's bugs and stay as they
// are.
func requestError(err error) error {
	if unsupportedInput, ok := errors.AsType[*unsupportedInputError](err); ok {
		return &model.Error{Provider: Provider, Class: model.ClassBadRequest, Message: unsupportedInput.reason, Err: err}
	}
	return err
}

// rejectAudioAndVideo fails for a message with audio or video, which the
// Messages API does not take.
func rejectAudioAndVideo(message *run.Message) error {
	if len(message.Audio) > 0 {
		audio := message.Audio[0]
		return unsupported("audio %s: %s does not take audio input", mediaName(audio.ID, audio.Filepath, audio.URL), Provider)
	}
	if len(message.Videos) > 0 {
		video := message.Videos[0]
		return unsupported("video %s: %s does not take video input", mediaName(video.ID, video.Filepath, video.URL), Provider)
	}
	return nil
}

// mediaName names a medium in error messages by the first of its id, file
// path and URL that is set.
func mediaName(candidates ...string) string {
	if name := cmp.Or(candidates...); name != "" {
		return fmt.Sprintf("%q", name)
	}
	return "without id"
}

// documentBlock encodes a document as a document block titled with its
// name. A file path is not read: the caller gives the content.
func documentBlock(file run.File) (sdk.ContentBlockParamUnion, error) {
	document := model.DocumentOf(file)
	var block sdk.ContentBlockParamUnion
	var err error
	switch document.Kind {
	case model.DocumentPDF:
		block, err = pdfBlock(document, file)
	case model.DocumentText:
		block, err = textDocumentBlock(document, file)
	default:
		err = unsupported("document %q (%s): %s takes %s", document.Name, cmp.Or(document.MIMEType, "unknown type"), Provider, model.SupportedDocuments)
	}
	if err != nil {
		return sdk.ContentBlockParamUnion{}, err
	}
	block.OfDocument.Title = sdk.String(document.Name)
	return block, nil
}

// pdfBlock sends a PDF from its content, base64-encoded, or else from its
// URL, which the API fetches.
func pdfBlock(document model.Document, file run.File) (sdk.ContentBlockParamUnion, error) {
	switch {
	case len(file.Content) > 0:
		return sdk.NewDocumentBlock(sdk.Base64PDFSourceParam{Data: base64.StdEncoding.EncodeToString(file.Content)}), nil
	case file.URL != "":
		return sdk.NewDocumentBlock(sdk.URLPDFSourceParam{URL: file.URL}), nil
	}
	return sdk.ContentBlockParamUnion{}, noContent(document)
}

// textDocumentBlock sends a text document as a plain-text source, which
// the API takes only inline.
func textDocumentBlock(document model.Document, file run.File) (sdk.ContentBlockParamUnion, error) {
	switch {
	case len(file.Content) == 0 && file.URL != "":
		return sdk.ContentBlockParamUnion{}, unsupported("document %q has only a URL: %s takes a text document inline, so give its content", document.Name, Provider)
	case len(file.Content) == 0:
		return sdk.ContentBlockParamUnion{}, noContent(document)
	case !utf8.Valid(file.Content):
		return sdk.ContentBlockParamUnion{}, unsupported("document %q (%s) is not UTF-8 text", document.Name, cmp.Or(document.MIMEType, "unknown type"))
	}
	return sdk.NewDocumentBlock(sdk.PlainTextSourceParam{Data: string(file.Content)}), nil
}

// noContent explains that a document has neither content nor a URL.
func noContent(document model.Document) error {
	return unsupported("document %q has no content (a file path must be read by the caller)", document.Name)
}

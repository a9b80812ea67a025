package openai

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
)

// The APIs' names in error messages.
const (
	chatAPIName      = "Chat Completions"
	responsesAPIName = "the Responses API"
)

// unsupportedInputError is a medium or document of a user message that the
// API cannot take. [Model.requestError] reports it as a bad request.
type unsupportedInputError struct{ reason string }

func (e *unsupportedInputError) Error() string { return e.reason }

func unsupported(format string, args ...any) error {
	return &unsupportedInputError{reason: fmt.Sprintf(format, args...)}
}

// requestError classes a failure to build a request: input the API cannot
// take is a [model.ClassBadRequest], which no retry can fix. Other failures
// (an unknown role, a broken schema) are the caller's bugs and stay as they
// are.
func (m *Model) requestError(err error) error {
	if unsupportedInput, ok := errors.AsType[*unsupportedInputError](err); ok {
		return &model.Error{Provider: m.info.Provider, Class: model.ClassBadRequest, Message: unsupportedInput.reason, Err: err}
	}
	return err
}

// hasMedia reports whether a user message brings more than its text.
func hasMedia(message *run.Message) bool {
	return len(message.Images) > 0 || len(message.Audio) > 0 || len(message.Videos) > 0 || len(message.Files) > 0
}

// rejectVideos fails for a message with video, which neither API takes.
func rejectVideos(message *run.Message, api string) error {
	if len(message.Videos) == 0 {
		return nil
	}
	video := message.Videos[0]
	return unsupported("video %s: %s does not take video input", mediaName(video.ID, video.Filepath, video.URL), api)
}

// rejectResponsesAudio fails for a message with audio, which only Chat
// Completions takes.
func rejectResponsesAudio(message *run.Message) error {
	if len(message.Audio) == 0 {
		return nil
	}
	audio := message.Audio[0]
	return unsupported("audio %s: %s does not take audio input; use Chat Completions (Config.API %q)",
		mediaName(audio.ID, audio.Filepath, audio.URL), responsesAPIName, APIChat)
}

// mediaName names a medium in error messages by the first of its id, file
// path and URL that is set.
func mediaName(candidates ...string) string {
	if name := cmp.Or(candidates...); name != "" {
		return fmt.Sprintf("%q", name)
	}
	return "without id"
}

// chatAudioPart sends an audio clip as an input_audio part: its content,
// base64-encoded, in one of the two formats Chat Completions takes.
func chatAudioPart(audio run.Audio) (sdk.ChatCompletionContentPartUnionParam, error) {
	name := mediaName(audio.ID, audio.Filepath, audio.URL)
	if len(audio.Content) == 0 {
		return sdk.ChatCompletionContentPartUnionParam{}, unsupported("audio %s has no content: %s takes audio inline (a URL or file path must be read by the caller)", name, chatAPIName)
	}
	format := audioFormat(audio)
	if format != "wav" && format != "mp3" {
		return sdk.ChatCompletionContentPartUnionParam{}, unsupported("audio %s (%s): %s takes wav or mp3 audio",
			name, cmp.Or(audio.MimeType, audio.Format, "unknown format"), chatAPIName)
	}
	return sdk.InputAudioContentPart(sdk.ChatCompletionContentPartInputAudioInputAudioParam{
		Data:   base64.StdEncoding.EncodeToString(audio.Content),
		Format: format,
	}), nil
}

// audioFormat is a clip's format as Chat Completions names it (wav, mp3),
// from its Format, else its MIME type, else its content; other formats are
// returned as they are.
func audioFormat(audio run.Audio) string {
	described := strings.ToLower(strings.TrimPrefix(audio.Format, "."))
	if described == "" {
		described = strings.ToLower(audio.MimeType)
	}
	if described == "" {
		described = http.DetectContentType(audio.Content)
	}
	switch described {
	case "wav", "wave", "audio/wav", "audio/wave", "audio/x-wav", "audio/vnd.wave":
		return "wav"
	case "mp3", "mpeg", "audio/mpeg", "audio/mp3", "audio/mpeg3":
		return "mp3"
	}
	return described
}

// chatFilePart sends a document: a PDF as a file part carrying its content
// as a data URL, a text document as a text part (see [documentText]).
func chatFilePart(file run.File) (sdk.ChatCompletionContentPartUnionParam, error) {
	document := model.DocumentOf(file)
	switch document.Kind {
	case model.DocumentPDF:
		switch {
		case len(file.Content) == 0 && file.URL != "":
			return sdk.ChatCompletionContentPartUnionParam{}, unsupported("document %q has only a URL, which %s cannot fetch: give its content", document.Name, chatAPIName)
		case len(file.Content) == 0:
			return sdk.ChatCompletionContentPartUnionParam{}, noContent(document)
		}
		return sdk.FileContentPart(sdk.ChatCompletionContentPartFileFileParam{
			FileData: param.NewOpt(pdfDataURL(file.Content)),
			Filename: param.NewOpt(document.Name),
		}), nil
	case model.DocumentText:
		text, err := documentText(document, file, chatAPIName)
		if err != nil {
			return sdk.ChatCompletionContentPartUnionParam{}, err
		}
		return sdk.TextContentPart(text), nil
	}
	return sdk.ChatCompletionContentPartUnionParam{}, unsupportedDocument(document, chatAPIName)
}

// responsesFilePart sends a document: a PDF as an input_file part carrying
// its content as a data URL, or its URL when it has no content; a text
// document as an input_text part (see [documentText]).
func responsesFilePart(file run.File) (responses.ResponseInputContentUnionParam, error) {
	document := model.DocumentOf(file)
	switch document.Kind {
	case model.DocumentPDF:
		input := responses.ResponseInputFileParam{Filename: param.NewOpt(document.Name)}
		switch {
		case len(file.Content) > 0:
			input.FileData = param.NewOpt(pdfDataURL(file.Content))
		case file.URL != "":
			input.FileURL = param.NewOpt(file.URL)
		default:
			return responses.ResponseInputContentUnionParam{}, noContent(document)
		}
		return responses.ResponseInputContentUnionParam{OfInputFile: &input}, nil
	case model.DocumentText:
		text, err := documentText(document, file, responsesAPIName)
		if err != nil {
			return responses.ResponseInputContentUnionParam{}, err
		}
		return responses.ResponseInputContentParamOfInputText(text), nil
	}
	return responses.ResponseInputContentUnionParam{}, unsupportedDocument(document, responsesAPIName)
}

// documentText is a text document as the model reads it: its text inside a
// file element that names it, <file name="notes.md">…</file>, so the model
// can tell the document from the question and refer to it by name.
func documentText(document model.Document, file run.File, api string) (string, error) {
	switch {
	case len(file.Content) == 0 && file.URL != "":
		return "", unsupported("document %q has only a URL: %s takes a text document inline, so give its content", document.Name, api)
	case len(file.Content) == 0:
		return "", noContent(document)
	case !utf8.Valid(file.Content):
		return "", unsupported("document %q (%s) is not UTF-8 text", document.Name, cmp.Or(document.MIMEType, "unknown type"))
	}
	return fmt.Sprintf("<file name=\"%s\">\n%s\n</file>", attributeEscaper.Replace(document.Name), file.Content), nil
}

// attributeEscaper escapes a name for a double-quoted attribute.
var attributeEscaper = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `"`, "&quot;")

func pdfDataURL(content []byte) string {
	return "data:application/pdf;base64," + base64.StdEncoding.EncodeToString(content)
}

// noContent explains that a document has neither content nor a URL. A file
// path is not read here: the model layer does no file I/O, the caller gives
// the content.
func noContent(document model.Document) error {
	return unsupported("document %q has no content (a file path must be read by the caller)", document.Name)
}

// unsupportedDocument explains that a document's type cannot be sent.
func unsupportedDocument(document model.Document, api string) error {
	return unsupported("document %q (%s): %s takes %s", document.Name, cmp.Or(document.MIMEType, "unknown type"), api, model.SupportedDocuments)
}

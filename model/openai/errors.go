package openai

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agnogo/agnogo/model"
)

// errStreamCut is the cause of a stream that ended before the reply did.
var errStreamCut = errors.New("the stream ended before the reply was complete")

// wrapError turns a failed call into a *model.Error carrying the class the
// agent's retry policy acts on. A cancelled or expired ctx is returned as
// ctx.Err(), so callers can tell it from a provider failure.
func (m *Model) wrapError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		message := cmp.Or(apiErr.Message, http.StatusText(apiErr.StatusCode), apiErr.Error())
		return &model.Error{
			Provider:   m.info.Provider,
			StatusCode: apiErr.StatusCode,
			Class:      classify(apiErr.StatusCode, apiErr.Code, apiErr.Type, message),
			Message:    message,
			Err:        err,
		}
	}
	var streamErr *ssestream.StreamError
	if errors.As(err, &streamErr) {
		code, kind, message := errorFields(streamErr.Event.Data)
		message = cmp.Or(message, streamErr.Message)
		return &model.Error{
			Provider: m.info.Provider,
			Class:    classify(0, code, kind, message),
			Message:  message,
			Err:      err,
		}
	}
	class := model.ClassOf(err)
	if class == model.ClassUnknown && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		class = model.ClassConnection // the server dropped the connection before or during the reply
	}
	return &model.Error{Provider: m.info.Provider, Class: class, Message: err.Error(), Err: err}
}

// failure is a *model.Error for a failure the server reported inside a
// successful HTTP reply (a response.failed or error event).
func (m *Model) failure(code, message string) error {
	message = cmp.Or(message, code, "the reply failed")
	return &model.Error{
		Provider: m.info.Provider,
		Class:    classify(0, code, "", message),
		Message:  message,
		Err:      errors.New(message),
	}
}

// cutStream is the error of a stream that ended early.
func (m *Model) cutStream() error {
	return &model.Error{
		Provider: m.info.Provider,
		Class:    model.ClassConnection,
		Message:  errStreamCut.Error(),
		Err:      errStreamCut,
	}
}

// classify refines the class of an HTTP status with OpenAI's error code,
// type and message: a context-window overflow and a content-policy refusal
// are bad requests that retrying the same input cannot fix. With status 0 (a
// failure reported mid-stream) the code, type and message alone decide.
func classify(status int, code, kind, message string) model.Class {
	if status != 0 {
		class := model.ClassifyStatus(status)
		if class != model.ClassBadRequest {
			return class
		}
		return cmp.Or(refusalClass(code, kind, message), class)
	}
	return cmp.Or(refusalClass(code, kind, message), classOfCode(code, kind))
}

// refusalClass recognises the bad requests that have a class of their own:
// context-window overflows and content-policy refusals. It returns
// ClassUnknown (zero) for any other.
func refusalClass(code, kind, message string) model.Class {
	lower := strings.ToLower(message)
	switch {
	case code == "context_length_exceeded",
		strings.Contains(lower, "maximum context length"),
		strings.Contains(lower, "context window"),
		strings.Contains(lower, "context_length_exceeded"):
		return model.ClassContextWindow
	case code == "content_filter" || code == "content_policy_violation" || kind == "content_filter",
		strings.Contains(lower, "content management policy"),
		strings.Contains(lower, "content policy"),
		strings.Contains(lower, "usage policy"),
		strings.Contains(lower, "safety system"):
		return model.ClassContentPolicy
	}
	return model.ClassUnknown
}

// classOfCode classifies a failure reported without an HTTP status.
func classOfCode(code, kind string) model.Class {
	switch {
	case code == "rate_limit_exceeded" || kind == "rate_limit_error" || kind == "requests" || code == "insufficient_quota":
		return model.ClassRateLimit
	case code == "server_error" || code == "internal_error" || kind == "server_error" || code == "server_is_overloaded":
		return model.ClassServer
	case code == "invalid_api_key" || kind == "authentication_error" || kind == "permission_error":
		return model.ClassAuth
	case code == "invalid_request_error" || kind == "invalid_request_error" || code == "invalid_prompt":
		return model.ClassBadRequest
	}
	return model.ClassUnknown
}

// errorFields reads code, type and message from a JSON error payload:
// {"error": {...}}, or the error object itself.
func errorFields(payload []byte) (code, kind, message string) {
	var envelope struct {
		Error json.RawMessage `json:"error"`
	}
	object := payload
	if json.Unmarshal(payload, &envelope) == nil && len(envelope.Error) > 0 {
		object = envelope.Error
	}
	var fields struct {
		Code    json.RawMessage `json:"code"`
		Type    string          `json:"type"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(object, &fields) != nil {
		var text string
		if json.Unmarshal(object, &text) == nil {
			return "", "", text
		}
		return "", "", ""
	}
	return jsonScalar(fields.Code), fields.Type, fields.Message
}

// jsonScalar is a JSON string's or number's text; codes are strings on
// OpenAI and sometimes numbers elsewhere.
func jsonScalar(raw json.RawMessage) string {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text
	}
	var number json.Number
	if json.Unmarshal(raw, &number) == nil {
		return number.String()
	}
	return ""
}

// maxErrorBody bounds how much of an error reply is read.
const maxErrorBody = 1 << 20

// normalizeErrorBody is SDK middleware that rewrites an error reply the SDK
// could not decode — plain text from a proxy, {"error": "text"} or
// {"detail": …} from an OpenAI-compatible server — into OpenAI's
// {"error": {"message": …}} shape, so that every HTTP failure reaches
// [Model.wrapError] as an *openai.Error with its status code.
func normalizeErrorBody(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res == nil || res.StatusCode < 400 || res.Body == nil {
		return res, err
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	_ = res.Body.Close()
	if err != nil {
		body = nil // the status still says what failed
	}
	if normalized, changed := openAIErrorBody(res.StatusCode, body); changed {
		body = normalized
		res.Header.Set("Content-Type", "application/json")
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	res.ContentLength = int64(len(body))
	res.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return res, nil
}

// openAIErrorBody returns body in OpenAI's error shape, and whether it had to
// be rewritten.
func openAIErrorBody(status int, body []byte) ([]byte, bool) {
	var envelope map[string]json.RawMessage
	if json.Unmarshal(body, &envelope) == nil {
		var object map[string]json.RawMessage
		if json.Unmarshal(envelope["error"], &object) == nil && object != nil {
			return body, false
		}
	}
	message := ""
	if envelope != nil {
		for _, key := range []string{"error", "detail", "message"} {
			if text := jsonText(envelope[key]); text != "" {
				message = text
				break
			}
		}
	}
	if message == "" {
		message = strings.TrimSpace(string(body))
		if len(message) > 500 {
			message = message[:500] + "…"
		}
	}
	message = cmp.Or(message, http.StatusText(status), "HTTP "+strconv.Itoa(status))
	rewritten, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message}})
	return rewritten, true
}

// jsonText is a JSON value as text: a string's content, anything else as
// JSON; "" when absent.
func jsonText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return text
	}
	return string(raw)
}

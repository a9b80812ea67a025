package anthropic

import (
	"context"
	"errors"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/agnogo/agnogo/model"
)

// The API's error types that the classification looks at.
const (
	errorTypeInvalidRequest = "invalid_request_error"
	errorTypeAuthentication = "authentication_error"
	errorTypePermission     = "permission_error"
	errorTypeNotFound       = "not_found_error"
	errorTypeRateLimit      = "rate_limit_error"
	errorTypeTimeout        = "timeout_error"
	errorTypeOverloaded     = "overloaded_error"
)

// contextWindowMessages are the phrases of the 400 errors that mean the
// conversation no longer fits the model, e.g. "prompt is too long: 210000
// tokens > 200000 maximum" and "input length and `max_tokens` exceed context
// limit: …".
var contextWindowMessages = []string{"prompt is too long", "exceed context limit", "context window"}

// providerError wraps an error of the SDK in a [*model.Error] with its class.
// A done ctx wins over whatever the aborted request reported; API errors are
// classified by status, type and message; anything else (a refused
// connection, a timeout, a broken stream) keeps its cause and is classified
// by [model.ClassOf].
func providerError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return &model.Error{Provider: Provider, Class: model.ClassOf(ctxErr), Message: ctxErr.Error(), Err: ctxErr}
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		return fromAPIError(apiErr)
	}
	return &model.Error{Provider: Provider, Class: model.ClassOf(err), Message: err.Error(), Err: err}
}

// fromAPIError converts an error the API answered with: an HTTP error status,
// or an error event in the middle of a stream (whose HTTP status was 200).
func fromAPIError(apiErr *sdk.Error) *model.Error {
	errorType := string(apiErr.Type())
	message := apiErr.Message
	if message == "" {
		message = apiErr.RawJSON()
	}
	if errorType != "" {
		message = errorType + ": " + message
	}
	status := apiErr.StatusCode
	if status < 400 {
		// An error event mid-stream: the request got an answer, the reply
		// failed. Its class comes from the error type alone.
		return &model.Error{Provider: Provider, Class: classifyErrorType(errorType, message), Message: message + " (error event mid-stream)", Err: apiErr}
	}
	return &model.Error{Provider: Provider, StatusCode: status, Class: classifyStatus(status, errorType, message), Message: message, Err: apiErr}
}

// classifyStatus refines [model.ClassifyStatus] with what Anthropic's errors
// say: 529 and overloaded_error are server trouble (retry), and a 400 about
// the prompt's length is a context-window overflow.
func classifyStatus(status int, errorType, message string) model.Class {
	switch {
	case status == 529 || errorType == errorTypeOverloaded:
		return model.ClassServer
	case status == 400 && isContextWindow(message):
		return model.ClassContextWindow
	}
	return model.ClassifyStatus(status)
}

// classifyErrorType classifies an error event by its type. Errors mid-stream
// are overwhelmingly overload and server trouble, so unknown types retry.
func classifyErrorType(errorType, message string) model.Class {
	switch errorType {
	case errorTypeInvalidRequest, errorTypeNotFound:
		if isContextWindow(message) {
			return model.ClassContextWindow
		}
		return model.ClassBadRequest
	case errorTypeAuthentication, errorTypePermission:
		return model.ClassAuth
	case errorTypeRateLimit:
		return model.ClassRateLimit
	case errorTypeTimeout:
		return model.ClassTimeout
	}
	return model.ClassServer
}

func isContextWindow(message string) bool {
	message = strings.ToLower(message)
	for _, phrase := range contextWindowMessages {
		if strings.Contains(message, phrase) {
			return true
		}
	}
	return false
}

// streamError reports a stream that broke the protocol or ended early. The
// server misbehaved, so a retry may well succeed.
func streamError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return providerError(ctx, ctxErr)
	}
	return &model.Error{Provider: Provider, Class: model.ClassServer, Message: err.Error(), Err: err}
}

package openai

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
)

// reasoningSeparator separates the parts of a reasoning summary.
const reasoningSeparator = "\n\n"

// responseIDKey is the key of the response id in [model.Response.ProviderData].
const responseIDKey = "response_id"

// invokeResponses calls the Responses API and waits for the whole reply.
func (m *Model) invokeResponses(ctx context.Context, req *model.Request) (*model.Response, error) {
	params, err := m.responsesParams(req)
	if err != nil {
		return nil, err
	}
	response, err := m.client.Responses.New(ctx, params)
	if err != nil {
		return nil, m.wrapError(ctx, err)
	}
	if response.Status == responses.ResponseStatusFailed {
		return nil, m.failure(string(response.Error.Code), response.Error.Message)
	}
	return responseOf(response, response.Output), nil
}

// streamResponses calls the Responses API with stream set, yielding the
// text and reasoning deltas.
func (m *Model) streamResponses(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		params, err := m.responsesParams(req)
		if err != nil {
			yield(nil, err)
			return
		}
		stream := m.client.Responses.NewStreaming(ctx, params)
		defer stream.Close() // also when the consumer breaks: releases the connection

		reply := responsesReply{items: map[int64]*responses.ResponseOutputItemUnion{}}
		for stream.Next() {
			event := stream.Current()
			delta, failure := reply.add(&event)
			if failure != nil {
				yield(nil, m.failure(failure.code, failure.message))
				return
			}
			if delta != nil && !yield(delta, nil) {
				return
			}
		}
		m.endStream(ctx, yield, stream.Err(), reply.final != nil, reply.response)
	}
}

// responsesReply assembles a streamed Responses API reply.
type responsesReply struct {
	// items are the output items by output index, as added and completed by
	// the stream; they stand in for the final response's output when a
	// server leaves that empty.
	items map[int64]*responses.ResponseOutputItemUnion
	// final is the response of response.completed (or .incomplete).
	final *responses.Response
}

// streamFailure is a failure the server reported in the stream.
type streamFailure struct{ code, message string }

// add takes one event and returns the delta it carries, or the failure it
// reports.
func (r *responsesReply) add(event *responses.ResponseStreamEventUnion) (*model.Chunk, *streamFailure) {
	switch event.Type {
	case "response.output_text.delta", "response.refusal.delta":
		if event.Delta != "" {
			return &model.Chunk{ContentDelta: event.Delta}, nil
		}
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		if event.Delta != "" {
			return &model.Chunk{ReasoningDelta: event.Delta}, nil
		}
	case "response.reasoning_summary_part.added":
		// Summary parts are separate paragraphs, as responseOf joins them.
		if event.SummaryIndex > 0 {
			return &model.Chunk{ReasoningDelta: reasoningSeparator}, nil
		}
	case "response.output_item.added", "response.output_item.done":
		item := event.Item
		r.items[event.OutputIndex] = &item
	case "response.function_call_arguments.delta":
		if item := r.items[event.OutputIndex]; item != nil {
			item.Arguments.OfString += event.Delta
		}
	case "response.function_call_arguments.done":
		if item := r.items[event.OutputIndex]; item != nil {
			item.Arguments.OfString = event.Arguments
		}
	case "response.completed", "response.incomplete":
		final := event.Response
		r.final = &final
	case "response.failed":
		return nil, &streamFailure{code: string(event.Response.Error.Code), message: event.Response.Error.Message}
	case "error":
		return nil, &streamFailure{code: event.Code, message: event.Message}
	}
	return nil, nil
}

func (r *responsesReply) response() *model.Response {
	output := r.final.Output
	if len(output) == 0 {
		for _, index := range slices.Sorted(maps.Keys(r.items)) {
			output = append(output, *r.items[index])
		}
	}
	return responseOf(r.final, output)
}

// responseOf converts a response with the given output items.
func responseOf(response *responses.Response, output []responses.ResponseOutputItemUnion) *model.Response {
	var content, reasoning []string
	var toolCalls []run.ToolCall
	for _, item := range output {
		switch item.Type {
		case "message":
			for _, part := range item.Content {
				switch part.Type {
				case "output_text":
					content = append(content, part.Text)
				case "refusal":
					content = append(content, part.Refusal)
				}
			}
		case "reasoning":
			for _, summary := range item.Summary {
				reasoning = append(reasoning, summary.Text)
			}
			for _, part := range item.Content {
				if part.Type == "reasoning_text" {
					reasoning = append(reasoning, part.Text)
				}
			}
		case "function_call":
			toolCalls = append(toolCalls, newToolCall(item.CallID, item.Name, item.Arguments.OfString))
		}
	}
	resp := &model.Response{
		Content:          strings.Join(content, ""),
		ReasoningContent: strings.Join(reasoning, reasoningSeparator),
		ToolCalls:        toolCalls,
		StopReason:       responsesStopReason(response, len(toolCalls) > 0),
		Usage:            responsesUsage(response.Usage),
	}
	if response.ID != "" {
		resp.ProviderData = map[string]any{responseIDKey: response.ID}
	}
	return resp
}

// responsesStopReason names why the reply stopped in Chat Completions'
// terms, which the rest of agnogo speaks: stop, tool_calls, length,
// content_filter.
func responsesStopReason(response *responses.Response, calledTools bool) string {
	if response.Status == responses.ResponseStatusIncomplete {
		switch reason := response.IncompleteDetails.Reason; reason {
		case "max_output_tokens":
			return "length"
		default:
			return cmp.Or(reason, "incomplete")
		}
	}
	if calledTools {
		return "tool_calls"
	}
	return "stop"
}

// responsesUsage maps Responses API usage; input_tokens includes the cached
// prefix, which is also reported as cache_read_tokens.
func responsesUsage(usage responses.ResponseUsage) run.Metrics {
	return withTotal(run.Metrics{
		InputTokens:      usage.InputTokens,
		OutputTokens:     usage.OutputTokens,
		TotalTokens:      usage.TotalTokens,
		CacheReadTokens:  usage.InputTokensDetails.CachedTokens,
		CacheWriteTokens: usage.InputTokensDetails.CacheWriteTokens,
		ReasoningTokens:  usage.OutputTokensDetails.ReasoningTokens,
	})
}

// responsesParams builds the Responses API request for req. The whole
// conversation is sent each time; no previous_response_id is used, so the
// model works the same with store disabled and on compatible servers.
func (m *Model) responsesParams(req *model.Request) (responses.ResponseNewParams, error) {
	input, err := responsesInput(req.Messages)
	if err != nil {
		return responses.ResponseNewParams{}, m.requestError(err)
	}
	params := responses.ResponseNewParams{
		Model: m.info.ID,
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input},
	}
	if temperature := m.temperatureFor(req); temperature != nil {
		params.Temperature = param.NewOpt(*temperature)
	}
	if maxTokens := m.maxTokensFor(req); maxTokens > 0 {
		params.MaxOutputTokens = param.NewOpt(maxTokens)
	}
	if len(req.Tools) > 0 {
		schemas, err := toolSchemas(req.Tools)
		if err != nil {
			return responses.ResponseNewParams{}, fmt.Errorf("openai responses request: %w", err)
		}
		for i, tool := range req.Tools {
			// Not strict: OpenAI's strict mode accepts only schemas whose
			// properties are all required, which tool schemas rarely are.
			function := responses.ToolParamOfFunction(tool.Name, schemas[i], false)
			if tool.Description != "" {
				function.OfFunction.Description = param.NewOpt(tool.Description)
			}
			params.Tools = append(params.Tools, function)
		}
		params.ToolChoice = responsesToolChoice(req.ToolChoice)
	}
	if format := req.ResponseFormat; format != nil {
		schema, err := schemaObject(format.Schema)
		if err != nil {
			return responses.ResponseNewParams{}, fmt.Errorf("openai responses request: response format %s: %w", format.Name, err)
		}
		params.Text.Format = responses.ResponseFormatTextConfigUnionParam{
			OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{
				Name:   schemaName(format.Name),
				Schema: schema,
				Strict: param.NewOpt(format.Strict),
			},
		}
	}
	return params, nil
}

// responsesToolChoice maps a model.Request tool choice like [chatToolChoice].
func responsesToolChoice(choice string) responses.ResponseNewParamsToolChoiceUnion {
	switch choice {
	case "":
		return responses.ResponseNewParamsToolChoiceUnion{}
	case "auto", "none", "required":
		return responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: param.NewOpt(responses.ToolChoiceOptions(choice))}
	}
	return responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: choice}}
}

// responsesInput converts the conversation to input items: messages, and an
// assistant's tool calls and their results as function_call and
// function_call_output items.
func responsesInput(messages []*run.Message) (responses.ResponseInputParam, error) {
	input := make(responses.ResponseInputParam, 0, len(messages))
	for i, message := range messages {
		if message == nil {
			continue
		}
		switch message.Role {
		case run.RoleSystem, run.RoleDeveloper:
			input = append(input, responses.ResponseInputItemParamOfMessage(messageText(message), responses.EasyInputMessageRole(message.Role)))
		case run.RoleUser:
			user, err := responsesUserMessage(message)
			if err != nil {
				return nil, fmt.Errorf("openai responses request: message %d: %w", i, err)
			}
			input = append(input, user)
		case run.RoleAssistant:
			if text := messageText(message); text != "" || len(message.ToolCalls) == 0 {
				input = append(input, responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleAssistant))
			}
			for _, call := range message.ToolCalls {
				input = append(input, responses.ResponseInputItemParamOfFunctionCall(toolArguments(call.Function.Arguments), call.ID, call.Function.Name))
			}
		case run.RoleTool:
			output := responses.ResponseInputItemParamOfFunctionCallOutput(messageText(message))
			output.OfFunctionCallOutput.CallID = param.NewOpt(message.ToolCallID)
			input = append(input, output)
		default:
			return nil, fmt.Errorf("openai responses request: message %d: unknown role %q", i, message.Role)
		}
	}
	return input, nil
}

// responsesUserMessage converts a user message, with its images as
// input_image parts and its documents as input_file or input_text parts.
// The Responses API takes no audio or video input.
func responsesUserMessage(message *run.Message) (responses.ResponseInputItemUnionParam, error) {
	text := messageText(message)
	if !hasMedia(message) {
		return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser), nil
	}
	if err := cmp.Or(rejectVideos(message, responsesAPIName), rejectResponsesAudio(message)); err != nil {
		return responses.ResponseInputItemUnionParam{}, err
	}
	var content responses.ResponseInputMessageContentListParam
	if text != "" {
		content = append(content, responses.ResponseInputContentParamOfInputText(text))
	}
	for _, image := range message.Images {
		url, err := imageURL(image)
		if err != nil {
			return responses.ResponseInputItemUnionParam{}, err
		}
		part := responses.ResponseInputContentParamOfInputImage(responses.ResponseInputImageDetail(cmp.Or(image.Detail, "auto")))
		part.OfInputImage.ImageURL = param.NewOpt(url)
		content = append(content, part)
	}
	for _, file := range message.Files {
		part, err := responsesFilePart(file)
		if err != nil {
			return responses.ResponseInputItemUnionParam{}, err
		}
		content = append(content, part)
	}
	return responses.ResponseInputItemParamOfMessage(content, responses.EasyInputMessageRoleUser), nil
}

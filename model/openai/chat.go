package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
)

// invokeChat calls Chat Completions and waits for the whole reply.
func (m *Model) invokeChat(ctx context.Context, req *model.Request) (*model.Response, error) {
	params, err := m.chatParams(req, false)
	if err != nil {
		return nil, err
	}
	completion, err := m.client.Chat.Completions.New(ctx, params)
	if err != nil {
		return nil, m.wrapError(ctx, err)
	}
	if len(completion.Choices) == 0 {
		return nil, m.failure("", "the reply has no choices")
	}
	choice := completion.Choices[0]
	resp := &model.Response{
		Content:          choice.Message.Content,
		ReasoningContent: extraText(choice.Message.JSON.ExtraFields),
		StopReason:       choice.FinishReason,
		Usage:            chatUsage(completion.Usage),
	}
	if resp.Content == "" {
		resp.Content = choice.Message.Refusal
	}
	for _, call := range choice.Message.ToolCalls {
		if call.Type == "" || call.Type == "function" {
			resp.ToolCalls = append(resp.ToolCalls, newToolCall(call.ID, call.Function.Name, call.Function.Arguments))
		}
	}
	return resp, nil
}

// streamChat calls Chat Completions with stream set, yielding the deltas.
func (m *Model) streamChat(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		params, err := m.chatParams(req, true)
		if err != nil {
			yield(nil, err)
			return
		}
		stream := m.client.Chat.Completions.NewStreaming(ctx, params)
		defer stream.Close() // also when the consumer breaks: releases the connection

		var reply chatReply
		for stream.Next() {
			if delta := reply.add(stream.Current()); delta != nil && !yield(delta, nil) {
				return
			}
		}
		m.endStream(ctx, yield, stream.Err(), reply.finishReason != "", reply.response)
	}
}

// chatReply assembles a streamed Chat Completions reply.
type chatReply struct {
	content      strings.Builder
	reasoning    strings.Builder
	calls        toolCallAssembler
	finishReason string
	usage        run.Metrics
}

// add takes one chunk and returns the text and reasoning it adds, or nil.
// Only the first choice counts: a request asks for one.
func (r *chatReply) add(chunk sdk.ChatCompletionChunk) *model.Chunk {
	if chunk.JSON.Usage.Valid() {
		r.usage = chatUsage(chunk.Usage)
	}
	var delta model.Chunk
	for _, choice := range chunk.Choices {
		if choice.Index != 0 {
			continue
		}
		delta.ContentDelta += choice.Delta.Content + choice.Delta.Refusal
		delta.ReasoningDelta += extraText(choice.Delta.JSON.ExtraFields)
		for _, call := range choice.Delta.ToolCalls {
			r.calls.add(call)
		}
		if choice.FinishReason != "" {
			r.finishReason = choice.FinishReason
		}
	}
	if delta.ContentDelta == "" && delta.ReasoningDelta == "" {
		return nil
	}
	r.content.WriteString(delta.ContentDelta)
	r.reasoning.WriteString(delta.ReasoningDelta)
	return &delta
}

func (r *chatReply) response() *model.Response {
	return &model.Response{
		Content:          r.content.String(),
		ReasoningContent: r.reasoning.String(),
		ToolCalls:        r.calls.toolCalls(),
		StopReason:       r.finishReason,
		Usage:            r.usage,
	}
}

// toolCallAssembler joins streamed tool-call deltas into whole calls. OpenAI
// opens each call with its index, id and name and then streams the
// arguments in pieces under the same index; a delta that brings a different
// id at a used index (as some compatible servers send) opens a new call.
type toolCallAssembler struct {
	calls   []*run.ToolCall
	byIndex map[int64]*run.ToolCall
}

func (a *toolCallAssembler) add(delta sdk.ChatCompletionChunkChoiceDeltaToolCall) {
	call := a.byIndex[delta.Index]
	if call == nil || (delta.ID != "" && call.ID != "" && delta.ID != call.ID) {
		call = &run.ToolCall{Type: "function"}
		a.calls = append(a.calls, call)
		if a.byIndex == nil {
			a.byIndex = map[int64]*run.ToolCall{}
		}
		a.byIndex[delta.Index] = call
	}
	if delta.ID != "" {
		call.ID = delta.ID
	}
	if call.Function.Name == "" {
		call.Function.Name = delta.Function.Name
	}
	call.Function.Arguments += delta.Function.Arguments
}

// toolCalls returns the calls in the order they were opened.
func (a *toolCallAssembler) toolCalls() []run.ToolCall {
	if len(a.calls) == 0 {
		return nil
	}
	calls := make([]run.ToolCall, len(a.calls))
	for i, call := range a.calls {
		calls[i] = newToolCall(call.ID, call.Function.Name, call.Function.Arguments)
	}
	return calls
}

// chatParams builds the Chat Completions request for req.
func (m *Model) chatParams(req *model.Request, stream bool) (sdk.ChatCompletionNewParams, error) {
	messages, err := chatMessages(req.Messages)
	if err != nil {
		return sdk.ChatCompletionNewParams{}, m.requestError(err)
	}
	params := sdk.ChatCompletionNewParams{Model: shared.ChatModel(m.info.ID), Messages: messages}
	if temperature := m.temperatureFor(req); temperature != nil {
		params.Temperature = param.NewOpt(*temperature)
	}
	if maxTokens := m.maxTokensFor(req); maxTokens > 0 {
		if m.legacyMaxTokens {
			params.MaxTokens = param.NewOpt(maxTokens)
		} else {
			params.MaxCompletionTokens = param.NewOpt(maxTokens)
		}
	}
	if len(req.Tools) > 0 {
		schemas, err := toolSchemas(req.Tools)
		if err != nil {
			return sdk.ChatCompletionNewParams{}, fmt.Errorf("openai chat request: %w", err)
		}
		for i, tool := range req.Tools {
			function := shared.FunctionDefinitionParam{Name: tool.Name, Parameters: shared.FunctionParameters(schemas[i])}
			if tool.Description != "" {
				function.Description = param.NewOpt(tool.Description)
			}
			params.Tools = append(params.Tools, sdk.ChatCompletionFunctionTool(function))
		}
		params.ToolChoice = chatToolChoice(req.ToolChoice)
	}
	if format := req.ResponseFormat; format != nil {
		schema, err := schemaObject(format.Schema)
		if err != nil {
			return sdk.ChatCompletionNewParams{}, fmt.Errorf("openai chat request: response format %s: %w", format.Name, err)
		}
		params.ResponseFormat = sdk.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
				Name:   schemaName(format.Name),
				Strict: param.NewOpt(format.Strict),
				Schema: schema,
			}},
		}
	}
	if stream {
		// Without include_usage a stream reports no usage at all.
		params.StreamOptions.IncludeUsage = param.NewOpt(true)
	}
	return params, nil
}

// chatToolChoice maps a model.Request tool choice: "" leaves the server's
// default (auto), a mode is sent as is, anything else names a function.
func chatToolChoice(choice string) sdk.ChatCompletionToolChoiceOptionUnionParam {
	switch choice {
	case "":
		return sdk.ChatCompletionToolChoiceOptionUnionParam{}
	case "auto", "none", "required":
		return sdk.ChatCompletionToolChoiceOptionUnionParam{OfAuto: param.NewOpt(choice)}
	}
	return sdk.ToolChoiceOptionFunctionToolChoice(sdk.ChatCompletionNamedToolChoiceFunctionParam{Name: choice})
}

// chatMessages converts the conversation to Chat Completions messages.
func chatMessages(messages []*run.Message) ([]sdk.ChatCompletionMessageParamUnion, error) {
	converted := make([]sdk.ChatCompletionMessageParamUnion, 0, len(messages))
	for i, message := range messages {
		if message == nil {
			continue
		}
		switch message.Role {
		case run.RoleSystem:
			converted = append(converted, sdk.SystemMessage(messageText(message)))
		case run.RoleDeveloper:
			converted = append(converted, sdk.DeveloperMessage(messageText(message)))
		case run.RoleUser:
			user, err := chatUserMessage(message)
			if err != nil {
				return nil, fmt.Errorf("openai chat request: message %d: %w", i, err)
			}
			converted = append(converted, user)
		case run.RoleAssistant:
			converted = append(converted, chatAssistantMessage(message))
		case run.RoleTool:
			converted = append(converted, sdk.ToolMessage(messageText(message), message.ToolCallID))
		default:
			return nil, fmt.Errorf("openai chat request: message %d: unknown role %q", i, message.Role)
		}
	}
	return converted, nil
}

// chatUserMessage converts a user message: its text, or content parts when it
// brings media or already holds a list of OpenAI content parts.
func chatUserMessage(message *run.Message) (sdk.ChatCompletionMessageParamUnion, error) {
	var user sdk.ChatCompletionMessageParamUnion
	switch parts, isList := message.Content.([]any); {
	case hasMedia(message):
		content, err := chatContentParts(message)
		if err != nil {
			return user, err
		}
		user = sdk.UserMessage(content)
	case isList:
		raw, err := json.Marshal(parts)
		if err != nil {
			return user, fmt.Errorf("content parts: %w", err)
		}
		user = sdk.ChatCompletionMessageParamUnion{OfUser: &sdk.ChatCompletionUserMessageParam{
			Content: param.Override[sdk.ChatCompletionUserMessageParamContentUnion](json.RawMessage(raw)),
		}}
	default:
		user = sdk.UserMessage(messageText(message))
	}
	if message.Name != "" {
		user.OfUser.Name = param.NewOpt(message.Name)
	}
	return user, nil
}

// chatContentParts is a user message as content parts: its text, then its
// images, audio clips and documents.
func chatContentParts(message *run.Message) ([]sdk.ChatCompletionContentPartUnionParam, error) {
	if err := rejectVideos(message, chatAPIName); err != nil {
		return nil, err
	}
	var content []sdk.ChatCompletionContentPartUnionParam
	if text := messageText(message); text != "" {
		content = append(content, sdk.TextContentPart(text))
	}
	for _, image := range message.Images {
		url, err := imageURL(image)
		if err != nil {
			return nil, err
		}
		content = append(content, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: url, Detail: image.Detail}))
	}
	for _, audio := range message.Audio {
		part, err := chatAudioPart(audio)
		if err != nil {
			return nil, err
		}
		content = append(content, part)
	}
	for _, file := range message.Files {
		part, err := chatFilePart(file)
		if err != nil {
			return nil, err
		}
		content = append(content, part)
	}
	return content, nil
}

// chatAssistantMessage converts an assistant message with its tool calls.
func chatAssistantMessage(message *run.Message) sdk.ChatCompletionMessageParamUnion {
	assistant := sdk.ChatCompletionAssistantMessageParam{}
	if text := messageText(message); text != "" || len(message.ToolCalls) == 0 {
		assistant.Content.OfString = param.NewOpt(text)
	}
	for _, call := range message.ToolCalls {
		assistant.ToolCalls = append(assistant.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
				ID: call.ID,
				Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{
					Name:      call.Function.Name,
					Arguments: toolArguments(call.Function.Arguments),
				},
			},
		})
	}
	return sdk.ChatCompletionMessageParamUnion{OfAssistant: &assistant}
}

// chatUsage maps Chat Completions usage; prompt_tokens includes the cached
// prefix, which is also reported as cache_read_tokens.
func chatUsage(usage sdk.CompletionUsage) run.Metrics {
	metrics := run.Metrics{
		InputTokens:       usage.PromptTokens,
		OutputTokens:      usage.CompletionTokens,
		TotalTokens:       usage.TotalTokens,
		AudioInputTokens:  usage.PromptTokensDetails.AudioTokens,
		AudioOutputTokens: usage.CompletionTokensDetails.AudioTokens,
		CacheReadTokens:   usage.PromptTokensDetails.CachedTokens,
		CacheWriteTokens:  usage.PromptTokensDetails.CacheWriteTokens,
		ReasoningTokens:   usage.CompletionTokensDetails.ReasoningTokens,
	}
	metrics.AudioTotalTokens = metrics.AudioInputTokens + metrics.AudioOutputTokens
	return withTotal(metrics)
}

// extraText reads the reasoning OpenAI-compatible servers add to a message
// or delta: reasoning_content (vLLM, DeepSeek) or reasoning (Ollama,
// OpenRouter).
func extraText(fields map[string]respjson.Field) string {
	for _, name := range []string{"reasoning_content", "reasoning"} {
		var text string
		if raw := fields[name].Raw(); raw != "" && json.Unmarshal([]byte(raw), &text) == nil && text != "" {
			return text
		}
	}
	return ""
}

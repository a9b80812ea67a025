package anthropic

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
)

// call is one request, encoded, with what decoding its reply needs.
type call struct {
	params sdk.MessageNewParams
	// answerTool names the synthetic tool that carries a structured answer;
	// it is empty when the request asks for none.
	answerTool string
}

// newCall encodes req for the Messages API.
func (m *Model) newCall(req *model.Request) (*call, error) {
	if req == nil {
		return nil, errors.New("encode anthropic request: nil request")
	}
	system, messages, err := encodeMessages(req.Messages)
	if err != nil {
		return nil, requestError(fmt.Errorf("encode anthropic request: %w", err))
	}
	c := &call{params: sdk.MessageNewParams{
		Model:     sdk.Model(m.id),
		MaxTokens: int64(cmp.Or(req.MaxTokens, m.maxTokens)),
		System:    system,
		Messages:  messages,
	}}
	if temperature := cmp.Or(req.Temperature, m.temperature); temperature != nil {
		// The SDK no longer models temperature (its API version rejects it),
		// so it travels as an extra field.
		c.params.SetExtraFields(map[string]any{"temperature": *temperature})
	}
	for _, definition := range req.Tools {
		tool, err := encodeTool(definition)
		if err != nil {
			return nil, fmt.Errorf("encode anthropic request: %w", err)
		}
		c.params.Tools = append(c.params.Tools, tool)
	}
	if req.ResponseFormat != nil {
		tool, err := encodeAnswerTool(req.ResponseFormat, req.Tools)
		if err != nil {
			return nil, fmt.Errorf("encode anthropic request: %w", err)
		}
		c.answerTool = tool.OfTool.Name
		c.params.Tools = append(c.params.Tools, tool)
	}
	c.params.ToolChoice = toolChoice(req.ToolChoice, len(req.Tools) > 0, c.answerTool)
	return c, nil
}

// encodeMessages splits a transcript into the system prompt and the
// user/assistant turns. Consecutive tool results become one user message of
// tool_result blocks, as the API wants them.
func encodeMessages(messages []*run.Message) ([]sdk.TextBlockParam, []sdk.MessageParam, error) {
	var system []sdk.TextBlockParam
	var turns []sdk.MessageParam
	// toolResults is the user message that collects the current run of
	// tool results, nil outside one.
	var toolResults *sdk.UserMessageParam
	for index, message := range messages {
		if message == nil {
			continue
		}
		if message.Role != run.RoleTool {
			toolResults = nil
		}
		switch message.Role {
		case run.RoleSystem, run.RoleDeveloper:
			if text := contentText(message.Content); text != "" {
				system = append(system, sdk.TextBlockParam{Text: text})
			}
		case run.RoleUser:
			blocks, err := userBlocks(message)
			if err != nil {
				return nil, nil, fmt.Errorf("message %d: %w", index, err)
			}
			turns = append(turns, sdk.NewUserMessage(blocks...))
		case run.RoleAssistant:
			blocks, err := assistantBlocks(message)
			if err != nil {
				return nil, nil, fmt.Errorf("message %d: %w", index, err)
			}
			if len(blocks) > 0 {
				turns = append(turns, sdk.NewAssistantMessage(blocks...))
			}
		case run.RoleTool:
			block := toolResultBlock(message)
			if toolResults != nil {
				toolResults.Content = append(toolResults.Content, block)
				continue
			}
			turns = append(turns, sdk.NewUserMessage(block))
			toolResults = turns[len(turns)-1].OfUser
		default:
			return nil, nil, fmt.Errorf("message %d: unknown role %q", index, message.Role)
		}
	}
	return system, turns, nil
}

// userBlocks encodes a user message: its text, or its content parts (text
// parts become text blocks, other parts are passed on as Anthropic content
// blocks), then its images and documents.
func userBlocks(message *run.Message) ([]sdk.ContentBlockParamUnion, error) {
	if err := rejectAudioAndVideo(message); err != nil {
		return nil, err
	}
	var blocks []sdk.ContentBlockParamUnion
	switch content := message.Content.(type) {
	case nil:
	case string:
		// The API rejects empty text blocks; an image may be the whole message.
		if content != "" {
			blocks = append(blocks, sdk.NewTextBlock(content))
		}
	case []any:
		for _, part := range content {
			block, err := partBlock(part)
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, block)
		}
	default:
		blocks = append(blocks, sdk.NewTextBlock(contentText(content)))
	}
	for _, image := range message.Images {
		block, err := imageBlock(image)
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, block)
	}
	for _, file := range message.Files {
		block, err := documentBlock(file)
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, block)
	}
	if len(blocks) == 0 {
		return nil, errors.New("user message has no content")
	}
	return blocks, nil
}

// partBlock encodes one content part of a user message.
func partBlock(part any) (sdk.ContentBlockParamUnion, error) {
	object, ok := part.(map[string]any)
	if !ok {
		return sdk.NewTextBlock(contentText(part)), nil
	}
	if text, ok := object["text"].(string); ok && object["type"] == "text" {
		return sdk.NewTextBlock(text), nil
	}
	raw, err := json.Marshal(object)
	if err != nil {
		return sdk.ContentBlockParamUnion{}, fmt.Errorf("content part: %w", err)
	}
	return param.Override[sdk.ContentBlockParamUnion](json.RawMessage(raw)), nil
}

// imageBlock encodes an image by URL, or inline from its content or file.
func imageBlock(image run.Image) (sdk.ContentBlockParamUnion, error) {
	if image.URL != "" {
		return sdk.NewImageBlock(sdk.URLImageSourceParam{URL: image.URL}), nil
	}
	content := image.Content
	if len(content) == 0 && image.Filepath != "" {
		data, err := os.ReadFile(image.Filepath)
		if err != nil {
			return sdk.ContentBlockParamUnion{}, fmt.Errorf("read image: %w", err)
		}
		content = data
	}
	if len(content) == 0 {
		return sdk.ContentBlockParamUnion{}, fmt.Errorf("image %q has no url, content or filepath", image.ID)
	}
	mediaType := image.MimeType
	switch {
	case mediaType != "":
	case image.Format == "jpg":
		mediaType = "image/jpeg"
	case image.Format != "":
		mediaType = "image/" + image.Format
	default:
		mediaType = http.DetectContentType(content)
	}
	return sdk.NewImageBlockBase64(mediaType, base64.StdEncoding.EncodeToString(content)), nil
}

// assistantBlocks encodes an assistant message: the thinking blocks it kept
// in ProviderData (the API wants them back on tool-use turns), its text, and
// its tool calls as tool_use blocks whose input is the parsed arguments.
func assistantBlocks(message *run.Message) ([]sdk.ContentBlockParamUnion, error) {
	var blocks []sdk.ContentBlockParamUnion
	if text := contentText(message.Content); text != "" {
		blocks = append(blocks, sdk.NewTextBlock(text))
	}
	for _, toolCall := range message.ToolCalls {
		input := json.RawMessage(toolCall.Function.Arguments)
		if len(bytes.TrimSpace(input)) == 0 {
			input = json.RawMessage("{}")
		}
		if !json.Valid(input) {
			return nil, fmt.Errorf("tool call %s (%s): arguments are not JSON: %q", toolCall.ID, toolCall.Function.Name, toolCall.Function.Arguments)
		}
		blocks = append(blocks, sdk.NewToolUseBlock(toolCall.ID, input, toolCall.Function.Name))
	}
	if len(blocks) == 0 {
		return nil, nil
	}
	return append(keptThinkingBlocks(message.ProviderData), blocks...), nil
}

// toolResultBlock encodes a tool-result message as a tool_result block.
func toolResultBlock(message *run.Message) sdk.ContentBlockParamUnion {
	result := sdk.ToolResultBlockParam{ToolUseID: message.ToolCallID}
	// The API rejects empty text blocks; an empty result has no content.
	if text := contentText(message.Content); text != "" {
		result.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: text}}}
	}
	if message.ToolCallError != nil && *message.ToolCallError {
		result.IsError = sdk.Bool(true)
	}
	return sdk.ContentBlockParamUnion{OfToolResult: &result}
}

// contentText renders message content as text: a string as is, a list of
// text parts as their texts, anything else as JSON.
func contentText(content any) string {
	switch content := content.(type) {
	case nil:
		return ""
	case string:
		return content
	case []any:
		texts := make([]string, 0, len(content))
		for _, part := range content {
			object, _ := part.(map[string]any)
			text, ok := object["text"].(string)
			if !ok || object["type"] != "text" {
				return marshalText(content)
			}
			texts = append(texts, text)
		}
		return strings.Join(texts, "\n")
	}
	return marshalText(content)
}

func marshalText(value any) string {
	encoded, err := json.Marshal(value)
	if err != nil {
		return fmt.Sprint(value)
	}
	return string(encoded)
}

// encodeTool encodes a tool definition; its parameters become the
// input_schema verbatim.
func encodeTool(definition model.ToolDefinition) (sdk.ToolUnionParam, error) {
	schema, err := inputSchema(definition.Parameters)
	if err != nil {
		return sdk.ToolUnionParam{}, fmt.Errorf("tool %s: %w", definition.Name, err)
	}
	tool := sdk.ToolParam{Name: definition.Name, InputSchema: schema}
	if definition.Description != "" {
		tool.Description = sdk.String(definition.Description)
	}
	return sdk.ToolUnionParam{OfTool: &tool}, nil
}

// inputSchema passes a JSON Schema through as raw JSON, so no keyword is
// lost; an empty one is an object without properties.
func inputSchema(schema json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return sdk.ToolInputSchemaParam{Properties: map[string]any{}}, nil
	}
	if !json.Valid(schema) {
		return sdk.ToolInputSchemaParam{}, errors.New("schema is not valid JSON")
	}
	return param.Override[sdk.ToolInputSchemaParam](schema), nil
}

// defaultAnswerToolName names the structured-output tool when the response
// format has no usable name.
const defaultAnswerToolName = "structured_output"

// maxToolNameLength is the API's limit on tool names.
const maxToolNameLength = 64

// encodeAnswerTool returns the synthetic tool that carries a structured
// answer: named after the schema, with the schema as its input schema.
func encodeAnswerTool(format *model.ResponseFormat, tools []model.ToolDefinition) (sdk.ToolUnionParam, error) {
	schema, err := inputSchema(format.Schema)
	if err != nil {
		return sdk.ToolUnionParam{}, fmt.Errorf("response format %s: %w", format.Name, err)
	}
	tool := sdk.ToolParam{
		Name:        answerToolName(format.Name, tools),
		InputSchema: schema,
		Description: sdk.String("Give your final answer by calling this tool once, with the answer as its input. The input must match the schema."),
	}
	if format.Strict {
		tool.Strict = sdk.Bool(true)
	}
	return sdk.ToolUnionParam{OfTool: &tool}, nil
}

// answerToolName turns a schema name into a valid tool name
// (^[a-zA-Z0-9_-]{1,64}$) that no real tool uses.
func answerToolName(schemaName string, tools []model.ToolDefinition) string {
	name := []byte(schemaName)
	for i, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			name[i] = '_'
		}
	}
	base := string(name[:min(len(name), maxToolNameLength-4)])
	if strings.Trim(base, "_") == "" {
		base = defaultAnswerToolName
	}
	taken := func(candidate string) bool {
		return slices.ContainsFunc(tools, func(tool model.ToolDefinition) bool { return tool.Name == candidate })
	}
	candidate := base
	for suffix := 2; taken(candidate); suffix++ {
		candidate = fmt.Sprintf("%s_%d", base, suffix)
	}
	return candidate
}

// toolChoice encodes the request's tool choice: "auto", "none",
// "required"/"any" or a tool's name. With a structured-output tool, a
// request without other tools (or with "none") is forced to call it; with
// other tools the model must call one of them or the answer tool ("any").
func toolChoice(choice string, hasTools bool, answerTool string) sdk.ToolChoiceUnionParam {
	if answerTool != "" {
		switch choice {
		case "", "auto", "required", "any":
			if hasTools {
				return sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{}}
			}
			return sdk.ToolChoiceParamOfTool(answerTool)
		case "none":
			return sdk.ToolChoiceParamOfTool(answerTool)
		}
		return sdk.ToolChoiceParamOfTool(choice)
	}
	if !hasTools {
		return sdk.ToolChoiceUnionParam{}
	}
	switch choice {
	case "":
		return sdk.ToolChoiceUnionParam{}
	case "auto":
		return sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{}}
	case "none":
		return sdk.ToolChoiceUnionParam{OfNone: &sdk.ToolChoiceNoneParam{}}
	case "required", "any":
		return sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{}}
	}
	return sdk.ToolChoiceParamOfTool(choice)
}

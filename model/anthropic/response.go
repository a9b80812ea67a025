package anthropic

import (
	"encoding/json"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
)

// ThinkingBlocksKey is the key of [model.Response.ProviderData] that keeps a
// reply's thinking blocks (with their signatures), so they can be sent back
// with the assistant message on the next turn, as the API requires for
// tool use with thinking.
const ThinkingBlocksKey = "anthropic_thinking_blocks"

// The stop reasons the response mapping looks at.
const (
	stopReasonEndTurn = "end_turn"
	stopReasonToolUse = "tool_use"
)

// thinkingBlock is a kept thinking or redacted_thinking block.
type thinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

// response converts a complete message. Text blocks are concatenated into
// Content, as the stream's deltas are, and thinking into ReasoningContent.
// A call of the structured-output tool becomes the Content instead of a tool
// call; when it was the only call, the stop reason is end_turn.
func (c *call) response(message *sdk.Message) *model.Response {
	response := &model.Response{
		StopReason: string(message.StopReason),
		Usage:      usage(message.Usage),
	}
	var content, reasoning strings.Builder
	var thinking []any
	answer, answered := "", false
	for _, block := range message.Content {
		switch block.Type {
		case "text":
			content.WriteString(block.Text)
		case "thinking":
			reasoning.WriteString(block.Thinking)
			thinking = append(thinking, map[string]any{"type": block.Type, "thinking": block.Thinking, "signature": block.Signature})
		case "redacted_thinking":
			thinking = append(thinking, map[string]any{"type": block.Type, "data": block.Data})
		case "tool_use":
			arguments := string(block.Input)
			if arguments == "" {
				arguments = "{}"
			}
			if c.answerTool != "" && block.Name == c.answerTool {
				if !answered {
					answer, answered = arguments, true
				}
				continue
			}
			response.ToolCalls = append(response.ToolCalls, run.ToolCall{
				ID:       block.ID,
				Type:     "function",
				Function: run.ToolCallFunction{Name: block.Name, Arguments: arguments},
			})
		}
	}
	response.Content = content.String()
	response.ReasoningContent = reasoning.String()
	if answered {
		response.Content = answer
		if len(response.ToolCalls) == 0 && response.StopReason == stopReasonToolUse {
			response.StopReason = stopReasonEndTurn
		}
	}
	if len(thinking) > 0 {
		response.ProviderData = map[string]any{ThinkingBlocksKey: thinking}
	}
	return response
}

// usage maps the API's usage. Anthropic's input_tokens exclude the cached
// prefix, which is reported apart as cache reads and writes; the total is
// input plus output, as Agno counts it.
func usage(u sdk.Usage) run.Metrics {
	return run.Metrics{
		InputTokens:      u.InputTokens,
		OutputTokens:     u.OutputTokens,
		TotalTokens:      u.InputTokens + u.OutputTokens,
		CacheReadTokens:  u.CacheReadInputTokens,
		CacheWriteTokens: u.CacheCreationInputTokens,
		ReasoningTokens:  u.OutputTokensDetails.ThinkingTokens,
	}
}

// delta returns the chunk a stream event carries, or nil. message is the
// reply accumulated so far, event included.
func (c *call) delta(event sdk.MessageStreamEventUnion, message *sdk.Message) *model.Chunk {
	if event.Type != "content_block_delta" {
		return nil
	}
	switch event.Delta.Type {
	case "text_delta":
		if event.Delta.Text != "" {
			return &model.Chunk{ContentDelta: event.Delta.Text}
		}
	case "thinking_delta":
		if event.Delta.Thinking != "" {
			return &model.Chunk{ReasoningDelta: event.Delta.Thinking}
		}
	case "input_json_delta":
		// The structured answer streams as content; other tool input is
		// delivered whole with the final chunk.
		if c.answerTool == "" || event.Delta.PartialJSON == "" || event.Index >= int64(len(message.Content)) {
			return nil
		}
		if block := message.Content[event.Index]; block.Type == "tool_use" && block.Name == c.answerTool {
			return &model.Chunk{ContentDelta: event.Delta.PartialJSON}
		}
	}
	return nil
}

// keptThinkingBlocks returns the thinking blocks an earlier reply kept in
// ProviderData. They may have been through JSON (a stored session), so they
// are decoded from it; unusable ones are skipped.
func keptThinkingBlocks(providerData map[string]any) []sdk.ContentBlockParamUnion {
	kept, ok := providerData[ThinkingBlocksKey]
	if !ok {
		return nil
	}
	encoded, err := json.Marshal(kept)
	if err != nil {
		return nil
	}
	var decoded []thinkingBlock
	if json.Unmarshal(encoded, &decoded) != nil {
		return nil
	}
	var blocks []sdk.ContentBlockParamUnion
	for _, block := range decoded {
		switch {
		case block.Type == "thinking" && block.Signature != "":
			blocks = append(blocks, sdk.NewThinkingBlock(block.Signature, block.Thinking))
		case block.Type == "redacted_thinking" && block.Data != "":
			blocks = append(blocks, sdk.NewRedactedThinkingBlock(block.Data))
		}
	}
	return blocks
}

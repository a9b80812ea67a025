// Package openai is the OpenAI provider of package model, on the official
// openai-go SDK (Chat Completions and Responses). Its base_url setting also
// serves OpenAI-compatible servers such as Ollama and vLLM.
package openai

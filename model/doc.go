// Package model defines the Model interface every language-model provider
// implements (Invoke, and Stream as an iter.Seq2 of chunks), the request,
// response and chunk types, and the error classes a run loop acts on:
// retryable, context-window exceeded, authentication, rate limit.
// [DocumentOf] tells providers how a document given to a run can be sent:
// as a PDF, as text, or not at all.
//
// Providers live in subpackages: model/openai, model/anthropic, and
// model/scripted for deterministic tests. The interface lands with the native
// agent runtime.
package model

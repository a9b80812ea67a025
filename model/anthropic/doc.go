// Package anthropic is the Anthropic Messages provider of package model, on the
// official anthropic-sdk-go SDK.
package anthropic

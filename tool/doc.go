// Package tool defines the Tool interface agents call, typed function tools
// built with tool.New[Args, Result] whose JSON schemas are inferred from Go
// types, toolkits, and offloading of very large tool results.
package tool

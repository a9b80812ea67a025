// Package codex drives codex app-server (JSON-RPC) as a first-class agnogo agent.
package codex

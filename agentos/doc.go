// Package agentos is the AgentOS HTTP server: the REST and SSE API that is
// wire-compatible with Agno's AgentOS, form parsing, the SSE writer,
// authentication (security key, JWT, RBAC, user isolation) and OpenAPI.
package agentos

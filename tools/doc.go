// Package tools is the home of the built-in toolkits, one subpackage each:
// workspace (files and shell with credential-file exclusions and confirmation
// for destructive operations), mcp (Model Context Protocol client), web.
package tools

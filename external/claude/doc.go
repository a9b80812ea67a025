// Package claude drives the claude CLI (stream-json and its control protocol)
// as a first-class agnogo agent.
package claude

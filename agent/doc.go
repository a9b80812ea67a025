// Package agent is the native agent: agent.New(agent.Config) builds an Agent
// whose run loop calls the model and tools, carries history, validates
// structured output, retries, pauses for human approval, and continues or
// forks earlier runs. It implements the Runner interface AgentOS serves.
package agent

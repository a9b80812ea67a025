package config

import (
	"cmp"
	"errors"
	"fmt"
)

// DefaultAgentID is the id of the agent of the default OS.
const DefaultAgentID = "assistant"

// defaultFile is a File with nothing configured: every key at its default.
func defaultFile(source string) *File {
	return &File{
		Source: source,
		Name:   DefaultName,
		DB:     DefaultDB,
		Queue: Queue{
			Durable:        true,
			MaxConcurrency: DefaultMaxConcurrency,
			MaxQueueDepth:  DefaultMaxQueueDepth,
			MaxAttempts:    DefaultMaxAttempts,

			RetryDelaySeconds: DefaultRetryDelaySeconds,
			TimeoutSeconds:    DefaultTimeoutSeconds,

			StopTimeoutSeconds: DefaultStopTimeoutSeconds,
			LockGraceSeconds:   DefaultLockGraceSeconds,
			RetentionSeconds:   DefaultRetentionSeconds,
		},
		Server:         defaultServer(),
		Prometheus:     Prometheus{Enabled: true, Path: DefaultPrometheusPath},
		Scheduler:      Scheduler{PollIntervalSeconds: DefaultSchedulerPollSeconds},
		MaxUploadBytes: DefaultMaxUploadBytes,
		Models:         map[string]*Model{},
	}
}

// Default returns the configuration used when there is no config file: the
// database [DefaultDB] and one agent, "assistant", with history on, whose
// model is $AGNOGO_MODEL — openai:ID, anthropic:ID or ollama:NAME — or
// [DefaultModel]. getenv reads the environment (pass os.Getenv); it is
// consulted for AGNOGO_MODEL only, credentials being read by [File.Build].
//
// A malformed AGNOGO_MODEL is an error naming the variable.
func Default(getenv func(string) string) (*File, error) {
	ref := cmp.Or(getenv("AGNOGO_MODEL"), DefaultModel)
	m, err := modelFromReference(ref)
	if errors.Is(err, errNotReference) {
		return nil, fmt.Errorf("AGNOGO_MODEL=%q: want provider:id, such as openai:gpt-5-mini, anthropic:claude-sonnet-4-6 or ollama:llama3", ref)
	}
	if err != nil {
		return nil, fmt.Errorf("AGNOGO_MODEL: %w", err)
	}
	file := defaultFile("default config")
	file.Agents = []*Agent{{
		ID:                  DefaultAgentID,
		Name:                "Assistant",
		Type:                TypeNative,
		Model:               ref,
		ResolvedModel:       m,
		AddHistoryToContext: true,
		NumHistoryRuns:      defaultNumHistoryRuns,
		DelayBetweenRetries: defaultDelayBetweenRetries,
	}}
	return file, nil
}

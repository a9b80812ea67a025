package config

import (
	"cmp"
	"context"
	"fmt"
	"iter"

	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/anthropic"
	"github.com/agnogo/agnogo/model/openai"
)

// The environment variables model credentials come from.
const (
	openAIKeyEnv     = "OPENAI_API_KEY"
	openAIBaseURLEnv = "OPENAI_BASE_URL"
	anthropicKeyEnv  = "ANTHROPIC_API_KEY"
)

// ollamaProvider is the provider name ollama models report, as Agno's.
const ollamaProvider = "Ollama"

// buildModel builds a configured model. A model that has no API key and no
// base URL to send requests to instead is not an error: it is returned as a
// [keylessModel] with a warning, so that the OS starts and the agents'
// runs fail with a message naming the variable to set.
func buildModel(m *Model, opts BuildOptions) (model.Model, string, error) {
	switch m.Provider {
	case ProviderOpenAI, ProviderOllama:
		cfg := openai.Config{
			ID:          m.ID,
			APIKey:      m.APIKey,
			BaseURL:     m.BaseURL,
			API:         m.API,
			HTTPClient:  opts.HTTPClient,
			Temperature: m.Temperature,
			MaxTokens:   m.MaxTokens,
		}
		if m.Provider == ProviderOllama {
			// Ollama ignores the key, but the client must not fall back
			// to $OPENAI_API_KEY and send it to a local server.
			cfg.APIKey = cmp.Or(cfg.APIKey, "ollama")
			cfg.BaseURL = cmp.Or(cfg.BaseURL, DefaultOllamaBaseURL)
			cfg.Provider = ollamaProvider
		} else {
			cfg.APIKey = cmp.Or(cfg.APIKey, opts.Getenv(openAIKeyEnv))
			cfg.BaseURL = cmp.Or(cfg.BaseURL, opts.Getenv(openAIBaseURLEnv))
			if cfg.APIKey == "" && cfg.BaseURL == "" {
				return keyless(m, openai.DefaultProvider, openAIKeyEnv)
			}
		}
		built, err := openai.New(cfg)
		if err != nil {
			return nil, "", fmt.Errorf("model %q: %w", m.Name, err)
		}
		return built, "", nil
	case ProviderAnthropic:
		cfg := anthropic.Config{
			ID:          m.ID,
			APIKey:      cmp.Or(m.APIKey, opts.Getenv(anthropicKeyEnv)),
			BaseURL:     m.BaseURL,
			HTTPClient:  opts.HTTPClient,
			Temperature: m.Temperature,
			MaxTokens:   m.MaxTokens,
		}
		if cfg.APIKey == "" && cfg.BaseURL == "" {
			return keyless(m, anthropic.Provider, anthropicKeyEnv)
		}
		built, err := anthropic.New(cfg)
		if err != nil {
			return nil, "", fmt.Errorf("model %q: %w", m.Name, err)
		}
		return built, "", nil
	}
	return nil, "", fmt.Errorf("model %q: unknown provider %q; use openai, anthropic or ollama", m.Name, m.Provider)
}

// keyless returns the stand-in for a model without credentials and the
// warning that says which variable to set.
func keyless(m *Model, provider, variable string) (model.Model, string, error) {
	stand := &keylessModel{info: model.Info{ID: m.ID, Provider: provider}, name: m.Name, variable: variable}
	return stand, fmt.Sprintf("model %q has no API key: set %s (or api_key under models); its agents' runs fail until then", m.Name, variable), nil
}

// keylessModel stands for a model whose API key is missing: every call fails
// with an authentication error, which the agent does not retry and reports
// as the run's error.
type keylessModel struct {
	info     model.Info
	name     string
	variable string
}

// Info implements [model.Model].
func (m *keylessModel) Info() model.Info { return m.info }

// Invoke implements [model.Model]; it always fails.
func (m *keylessModel) Invoke(context.Context, *model.Request) (*model.Response, error) {
	return nil, m.err()
}

// Stream implements [model.Model]; it always fails.
func (m *keylessModel) Stream(context.Context, *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) { yield(nil, m.err()) }
}

func (m *keylessModel) err() error {
	return &model.Error{
		Provider: m.info.Provider,
		Class:    model.ClassAuth,
		Message:  fmt.Sprintf("no API key for model %q: set %s, or api_key under models in the config file", m.name, m.variable),
	}
}

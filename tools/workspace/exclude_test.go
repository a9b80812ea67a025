package workspace

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefaultExclusions(t *testing.T) {
	t.Parallel()
	ex, err := parseExclusions(DefaultExclusions())
	require.NoError(t, err)
	tests := []struct {
		rel         string
		wantPattern string // "" when the path is allowed
	}{
		{".env", ".env*"},
		{".env.local", ".env*"},
		{".env.production", ".env*"},
		{"config/.env", ".env*"},
		{"prod.env", "*.env"},
		{".env.example", ""},
		{".env.sample", ""},
		{".env.template", ""},
		{".env.dist", ""},
		{"example.env", ""},
		{"env.example", ""},
		{"deploy/.env.example", ""},
		{"id_rsa", "id_rsa*"},
		{"keys/id_rsa.pub", "id_rsa*"},
		{"id_ed25519", "id_ed25519*"},
		{"server.pem", "*.pem"},
		{"tls/server.key", "*.key"},
		{"store.p12", "*.p12"},
		{".ssh/config", ".ssh"},
		{"home/.aws/credentials", ".aws"},
		{".kube/config", ".kube"},
		{".npmrc", ".npmrc"},
		{".git-credentials", ".git-credentials"},
		{".pgpass", ".pgpass"},
		{"credentials.json", "credentials.json"},
		{"gcp-credentials.json", "*-credentials.json"},
		{"aws_credentials.csv", "*_credentials.csv"},
		{"secrets.yaml", "secrets.yaml"},
		{"app-secrets.yml", "*-secrets.yml"},
		{"token.json", "token.json"},
		{"service_account.json", "service_account*.json"},
		{"my-service-account-key.json", "*-service-account*.json"},
		{"prod.tfvars", "*.tfvars"},
		{"terraform.tfstate.backup", "*.tfstate.*"},
		{".git/config", ".git"},
		{"web/node_modules/react/index.js", "node_modules"},
		{"pkg/__pycache__/x.pyc", "__pycache__"},
		{".claude/settings.json", ".claude"},
		{".venv/bin/python", ".venv"},
		{"build/out.o", "build"},
		// Deliberately not excluded: ordinary source named like secrets.
		{"credentials.py", ""},
		{"auth/credentials/store.go", ""},
		{"secrets.go", ""},
		{"docs/secrets.md", ""},
		{"main.go", ""},
		{"environment.go", ""},
		{"key.go", ""},
		{".", ""},
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			t.Parallel()
			_, pattern, excluded := ex.match(tt.rel)
			require.Equal(t, tt.wantPattern != "", excluded)
			require.Equal(t, tt.wantPattern, pattern)
		})
	}
}

func TestCustomExclusions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		patterns []string
		rel      string
		want     bool
	}{
		{"empty list disables", []string{}, ".env", false},
		{"exemption wins whatever the order", []string{"!keep.log", "*.log"}, "keep.log", false},
		{"deny without exemption", []string{"!keep.log", "*.log"}, "drop.log", true},
		{"exempt component does not free its children", []string{"secret*", "!secret_dir"}, "secret_dir/secret.txt", true},
		{"bare bang is a literal deny entry", []string{"!"}, "!", true},
		{"fnmatch negated class", []string{"[!a]*.txt"}, "b.txt", true},
		{"fnmatch negated class miss", []string{"[!a]*.txt"}, "a.txt", false},
		{"backslash is literal in fnmatch", []string{`a\b`}, `a\b`, true},
		{"case sensitive", []string{"*.PEM"}, "x.pem", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ex, err := parseExclusions(tt.patterns)
			require.NoError(t, err)
			_, _, excluded := ex.match(tt.rel)
			require.Equal(t, tt.want, excluded)
		})
	}
}

func TestParseExclusionsRejectsBadPatterns(t *testing.T) {
	t.Parallel()
	for _, pattern := range []string{"a/b", "[unclosed", "", "!dir/x"} {
		_, err := parseExclusions([]string{pattern})
		require.Error(t, err, "pattern %q", pattern)
	}
}

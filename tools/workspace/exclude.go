package workspace

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// exemptPrefix marks an exclusion entry as an exemption.
const exemptPrefix = "!"

// credentialPatterns are the default exclusions that protect secrets; the
// rest of the default list hides agent state, caches and build output. The
// difference only changes the refusal message.
var credentialPatterns = []string{
	// Environments and secrets
	".env*", "*.env",
	// Private keys, certificates and keystores
	"*.pem", "*.key", "*.crt", "*.cer", "*.der", "*.p8", "*.p12", "*.pfx", "*.jks", "*.jceks",
	"*.keystore", "*.asc", "*.gpg", "*.ppk", "*.kdbx", "*.keytab",
	"id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "known_hosts", "authorized_keys",
	// Directories where credential-writing CLIs keep their files. A pattern
	// matches one path component, so the directory is how .aws/credentials
	// or .kube/config are reached.
	".ssh", ".aws", ".gnupg", ".kube", ".docker", ".azure", ".m2", ".cargo", ".composer",
	// Registry, database and host tokens
	".npmrc", ".pypirc", ".netrc", "_netrc", ".git-credentials", ".dockercfg", ".pgpass", ".my.cnf",
	".boto", ".s3cfg", "rclone.conf", "kubeconfig", ".htpasswd", "htpasswd",
	// Credential and secret data files. Not credentials.* or secrets.*, nor
	// bare credentials: those would hide source such as credentials.py or a
	// credentials/ package.
	"credentials.json", "credentials.yaml", "credentials.yml", "credentials.ini", "credentials.cfg",
	"credentials.csv", "credentials.toml", "credentials.xml", "credentials.properties",
	"*-credentials.json", "*-credentials.yaml", "*-credentials.yml", "*-credentials.ini", "*-credentials.csv",
	"*_credentials.json", "*_credentials.yaml", "*_credentials.yml", "*_credentials.csv",
	"secret.json", "secret.yaml", "secret.yml",
	"secrets.json", "secrets.yaml", "secrets.yml", "secrets.ini", "secrets.cfg", "secrets.toml", "secrets.properties",
	"*-secrets.json", "*-secrets.yaml", "*-secrets.yml",
	"token.json", "tokens.json", "accessKeys.csv", "azureProfile.json",
	// Cloud service accounts, in every spelling the providers hand out
	"service_account*.json", "serviceAccount*.json", "service-account*.json",
	"*-service-account*.json", "*_service_account*.json",
	// Terraform inputs
	"*.tfvars", "*.tfvars.json",
}

// defaultExclusions is Agno 3.1's DEFAULT_EXCLUDE_PATTERNS
// (libs/agno/agno/tools/_local_file_utils.py), in its order.
var defaultExclusions = slices.Concat(
	[]string{
		// Agent and local scratch state
		".context", ".conductor", ".claude", ".codex", ".cursor",
		// Environments
		".venv", ".venvs", "venv",
	},
	credentialPatterns[:2], // .env*, *.env
	[]string{
		// A committed env template holds placeholders and documents the
		// variables, so it stays readable while real env files do not.
		"!.env.example", "!.env.sample", "!.env.template", "!.env.dist", "!example.env", "!env.example",
	},
	credentialPatterns[2:],
	[]string{
		// Version control
		".git", ".hg", ".svn",
		// Python caches and build artifacts
		"__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".tox", ".nox", ".ipynb_checkpoints",
		"dist", "build", "*.egg-info",
		// JavaScript and TypeScript
		"node_modules", ".next", ".turbo", ".nuxt", ".svelte-kit", ".docusaurus", ".parcel-cache",
		".nyc_output", "*.tsbuildinfo", ".serverless",
		// JVM (Java, Kotlin, Android, Gradle)
		".gradle", ".kotlin", "*.class",
		// Dart and Flutter
		".dart_tool", ".flutter-plugins", ".flutter-plugins-dependencies",
		// Swift and Xcode
		".build", "xcuserdata", "*.xcuserstate",
		// Ruby
		".bundle", "*.gem", ".yardoc",
		// Elixir
		"_build", ".elixir_ls",
		// .NET / Visual Studio
		".vs",
		// Infrastructure as Code
		".terraform", "*.tfstate", "*.tfstate.*", ".terragrunt-cache",
		// OS artifacts
		".DS_Store",
	},
)

// DefaultExclusions returns a copy of the default exclusion list: Agno 3.1's
// credential-file, agent-state, VCS and build-artifact patterns, with the
// env-template exemptions (`!.env.example`, …). Append to it to extend the
// defaults rather than replace them.
func DefaultExclusions() []string { return slices.Clone(defaultExclusions) }

// exclusions matches paths against an exclusion list as Agno does: each
// pattern is an fnmatch pattern tested against every component of the path
// relative to the root; a component matching an exemption is never excluded,
// whatever order the entries come in.
type exclusions struct {
	deny   []string
	exempt []string
	// credential marks deny patterns that protect secrets.
	credential map[string]bool
}

// parseExclusions splits the list into deny and exempt patterns, translated
// from fnmatch to path.Match syntax. A bare "!" names no pattern and is a
// literal deny entry, as in Agno.
func parseExclusions(patterns []string) (exclusions, error) {
	ex := exclusions{credential: map[string]bool{}}
	for _, credential := range credentialPatterns {
		ex.credential[credential] = true
	}
	for _, pattern := range patterns {
		exempt := len(pattern) > 1 && strings.HasPrefix(pattern, exemptPrefix)
		if exempt {
			pattern = pattern[1:]
		}
		if pattern == "" || strings.ContainsRune(pattern, '/') {
			return exclusions{}, fmt.Errorf("exclusion %q: a pattern matches one path component and cannot be empty or contain '/'", pattern)
		}
		if _, err := path.Match(fnmatchToGlob(pattern), ""); err != nil {
			return exclusions{}, fmt.Errorf("exclusion %q: %w", pattern, err)
		}
		if exempt {
			ex.exempt = append(ex.exempt, pattern)
		} else {
			ex.deny = append(ex.deny, pattern)
		}
	}
	return ex, nil
}

// match returns the deny pattern excluding rel, a slash-separated path
// relative to the root, and the component it matched; ok is false when rel
// is not excluded.
func (e exclusions) match(rel string) (component, pattern string, ok bool) {
	if len(e.deny) == 0 || rel == "." || rel == "" {
		return "", "", false
	}
	for _, part := range strings.Split(rel, "/") {
		denied := firstMatch(e.deny, part)
		if denied == "" || firstMatch(e.exempt, part) != "" {
			continue
		}
		return part, denied, true
	}
	return "", "", false
}

// firstMatch returns the first pattern matching name, or "".
func firstMatch(patterns []string, name string) string {
	for _, pattern := range patterns {
		if fnmatch(pattern, name) {
			return pattern
		}
	}
	return ""
}

// fnmatch reports whether name matches an fnmatch pattern (POSIX: case
// sensitive; '*' also matches a leading dot).
func fnmatch(pattern, name string) bool {
	ok, err := path.Match(fnmatchToGlob(pattern), name)
	return err == nil && ok
}

// fnmatchToGlob translates Python fnmatch syntax to path.Match syntax:
// fnmatch negates a class with "[!" and has no escape character.
func fnmatchToGlob(pattern string) string {
	pattern = strings.ReplaceAll(pattern, `\`, `\\`)
	return strings.ReplaceAll(pattern, "[!", "[^")
}

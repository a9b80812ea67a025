// Package config reads the agnogo YAML configuration file and builds a ready
// AgentOS from it: database, optional Redis, queue, auth, models and agents.
package config

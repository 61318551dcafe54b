package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// The YAML of configurations is read and written here alone: ReadRun
// decodes a run's config.yaml straight into a Config, ParseFile turns a
// user's config file into the tree the CLI's front end (viper) layers under
// the environment, the flags and --set, and YAML writes a run's
// config.yaml and a sweep's cells/<run>.yaml, which ReadRun reads back.
// viper parses no file itself.

// ParseFile reads the configuration file at path (ReadFile) and parses it
// into a tree of YAML mappings, for the front end to merge with its other
// layers and decode strictly. Errors name the file.
func ParseFile(path string) (map[string]any, error) {
	b, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	tree := map[string]any{}
	if err := yaml.Unmarshal(b, &tree); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return tree, nil
}

// YAML is c as a run's config.yaml holds it (ReadRun reads it back).
func (c Config) YAML() ([]byte, error) { return yaml.Marshal(c) }

package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agnogo/agnogo/internal/buildinfo"
)

// versionString is the line `agnogo version` prints: the version (set at
// link time with -X github.com/agnogo/agnogo/internal/buildinfo.version=…,
// else the one the go command recorded), the VCS revision and the Go
// toolchain.
func versionString() string { return "agnogo " + buildinfo.Read().String() }

// serverVersion is the version /info reports as os_version and the start
// line logs.
func serverVersion() string { return buildinfo.Read().Version }

func (c *cli) versionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the agnogo version, the revision it was built from and the Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(buildinfo.Read())
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionString())
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {version, revision, time, modified, go_version} as JSON")
	return cmd
}

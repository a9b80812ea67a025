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

// addVersionFlag gives root the --version (-v) flag, which prints the same
// line as `agnogo version`.
//
// Cobra's own flag (set Command.Version) prints through a version template,
// and executing any template makes the linker keep every exported method of
// every type: tens of megabytes (TestBinaryLinksNoTemplates). So the flag is
// declared here as cobra declares its own, and answered by the help
// function: root has no Run (one would add "agnogo [flags]" to its usage),
// and cobra answers such a command, once its flags are parsed, by calling
// the help function.
func addVersionFlag(root *cobra.Command) {
	var show bool
	root.Flags().BoolVarP(&show, "version", "v", false, "version for "+root.Name())
	// Marked as cobra marks its own, so that completion offers nothing
	// after it.
	_ = root.Flags().SetAnnotation("version", cobra.FlagSetByCobraAnnotation, []string{"true"})
	help := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		// --help wins over --version, as in cobra.
		if wantHelp, _ := cmd.Flags().GetBool("help"); cmd != root || !show || wantHelp {
			help(cmd, args)
			return
		}
		if _, err := fmt.Fprintln(cmd.OutOrStdout(), versionString()); err != nil {
			cmd.PrintErrln(err)
		}
	})
}

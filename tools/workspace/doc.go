// Package workspace is the built-in toolkit for working in a local directory:
// reading, listing, searching, writing and editing files, and running shell
// commands, in the manner of Agno's Workspace toolkit.
//
//	ws, err := workspace.New(workspace.Config{Root: "./project"})
//	…
//	agent.New(agent.Config{Model: m, Tools: ws.Tools(), Instructions: ws.Instructions()})
//
// The tools are read_file (line-numbered pages, continued with offset),
// list_files, search_files (substring or RE2 regular expression), write_file
// (atomic), edit_file (exact text replacement that must match once unless
// replace_all) and run_shell (bash -c in the root, with a timeout, the
// combined output cut in the middle past a limit, and the exit code).
//
// # Confinement
//
// Every path argument is resolved inside [Config.Root]: relative paths that
// climb out with "..", absolute paths elsewhere and symlinks whose target
// lies outside the root are refused. Symlinks are checked by evaluating the
// deepest existing ancestor of the path, so a file about to be created
// inside a symlinked directory is checked too, and the tools operate on the
// resolved path they checked.
//
// # Exclusions
//
// Credential files and noise are off limits: a path is excluded when any of
// its components, relative to the root, matches a pattern of
// [Config.Exclusions] (fnmatch syntax), unless the component matches a "!"
// exemption. The default list, [DefaultExclusions], is Agno 3.1's: env files
// (.env, .env.local, *.env, with .env.example and other templates exempt),
// private keys and certificates, credential directories (.ssh, .aws, …),
// token files, credential and secret data files, service-account keys,
// Terraform inputs, agent state, VCS and build directories. Excluded files
// are refused by read_file, write_file and edit_file and hidden from
// list_files and search_files.
//
// # Confirmation
//
// write_file, edit_file and run_shell change things, so by default their
// specs carry RequiresConfirmation and an agent pauses the run until a
// person approves each call; [Config.ConfirmWrites] turns that off.
//
// The root is a path boundary, not a sandbox: run_shell commands can read
// anything the process can, environment variables included. Run untrusted
// agents inside a container or VM.
package workspace

// Package config reads the agnogo YAML configuration file and builds what it
// describes: the database, the agents, the teams and the workflows, ready to
// run.
//
//	file, err := config.Load("agnogo.yaml")   // or config.Default(os.Getenv) without a file
//	if err != nil { … }                        // every problem, each naming its line
//	agentOS, err := file.Build(ctx, config.BuildOptions{})
//	if err != nil { … }
//	defer agentOS.Close()
//	runner, err := agentOS.Runner("assistant")
//
// The format is documented key by key, with defaults, in docs/config.md:
//
//	name: My AgentOS
//	db: sqlite://./agnogo.db
//	models:
//	  local: {provider: openai, id: gpt-5-mini, base_url: http://127.0.0.1:11434/v1, api_key: ${OPENAI_API_KEY}}
//	agents:
//	  - id: assistant
//	    model: local                 # a key of models, or provider:id such as anthropic:claude-sonnet-4-6
//	    tools: [workspace]
//	    add_history_to_context: true
//
// # Strictness
//
// [Parse] walks the YAML node tree itself instead of decoding into tagged
// structs, so an unknown key ("modle"), a value of the wrong type ("retries:
// lots"), a duplicate key or agent id, a model reference that leads nowhere,
// an unknown provider or toolkit are each reported as an [*Error] naming the
// file and line — agnogo.yaml:12: unknown key "modle" in agent "coder"; did
// you mean "model"? — and all of them at once, in line order. A key that
// belongs to another agent type (sandbox on a native agent) says which type
// it is for. YAML merge keys (<<: *anchor) work inside the known keys.
//
// # Environment variables
//
// ${VAR} in a value is replaced by the variable's value, and ${VAR:-default}
// by the default when VAR is unset or empty. An unset variable without a
// default becomes the empty string, which for most keys means "use the
// default" (an empty db is sqlite://./agnogo.db); an empty
// auth.security_key adds a warning to [File.Warnings]. $${ writes a literal
// ${. $VAR without braces is left alone.
//
// Variables are expanded inside values only, after the YAML is parsed, so a
// value holding a colon, a # or a newline can never change the file's
// structure, and ${VAR} works inside flow mappings such as {api_key:
// ${KEY}}. An unquoted value is typed by its expanded text: retries:
// ${RETRIES:-2} is a number.
//
// # Models and credentials
//
// openai models read OPENAI_API_KEY (and OPENAI_BASE_URL) when the file
// gives no api_key (and base_url); anthropic models read ANTHROPIC_API_KEY;
// ollama models talk to http://127.0.0.1:11434/v1 with no key. A model
// without any credentials does not stop [File.Build]: the OS starts, its
// Warnings name the variable to set, and each run of the model's agents
// fails with an authentication error naming it.
//
// # Native agents
//
// Every field of agent.Config a server user sets has a key, named as Agno
// names the option: offload_tool_results, update_memory_on_run (alias
// enable_user_memories), add_memories_to_context, enable_agentic_memory,
// memory_model, session_state, … A model's prices key prices its calls,
// replacing its entry in agent.DefaultPrices. An item of tools may be a
// mapping ([ToolOptions]): flags on a listed toolkit's tool
// (requires_confirmation, requires_user_input with user_input_fields,
// external_execution, stop_after_tool_call), or a tool declared in the file
// that the client runs (external_execution) or a person answers
// (requires_user_input). Agno options agnogo agents lack (reasoning, …)
// are refused with the reason. config/parity_test.go keeps agent.Config and
// the keys in step.
//
// # External agents
//
// Agents of type claude and codex drive the claude CLI and codex app-server
// (packages external/claude and external/codex); [File.Build] builds them
// into [OS.External] without starting anything, and [OS.Runner] and
// [OS.Server] serve them beside the native agents. Their options are typed
// keys (permission_mode, allowed_tools, mcp_servers, sandbox, env,
// claude_bin, …); the options agnogo manages itself — resume, session_id,
// continue, fork_session, include_partial_messages — are refused, as are
// environment variables the drivers set. Relative paths (cwd, claude_bin,
// config_dir, codex_home) are relative to the directory agnogo runs in, as
// db and workspace.root are.
//
// # Teams
//
// The teams key lists teams (package team): a leader model that delegates
// to members named by id — agents of any type and other teams of the same
// file — in a mode (coordinate, route, broadcast, tasks), with every option
// of team.Config a server user sets as a key named as Agno names it
// (respond_directly, delegate_to_all_members, stream_member_events, …). A
// member that is no agent or team of the file, a team among its own
// members, a cycle of teams and an id shared by an agent and a team are
// each an [*Error] naming the line. [File.Build] builds the teams after
// the agents, a team after the teams among its members, on the agents'
// database, into [OS.Teams]; [OS.Runner] finds them and [OS.Server] serves
// them after the agents. config/parity_test.go keeps team.Config and the
// keys in step.
//
// # Workflows
//
// The workflows key lists workflows (package workflow): named steps that
// run agents, teams and other workflows of the file by id (agent:, team:,
// workflow:), grouped as steps, parallel, loop, condition and router
// steps, with CEL expressions for conditions, loop ends and routes and a
// human_review asking a person about a step. A step that is none or two of
// the step types, a key its type does not take, a CEL expression that does
// not compile, a step naming what the file does not have (or what is of
// another kind), a workflow running itself (directly or through other
// workflows) and an id shared with an agent or a team are each an [*Error]
// naming the line. [File.Build] builds the workflows after the teams, a
// workflow after the workflows its steps run, on the agents' database,
// into [OS.Workflows]; [OS.Runner] finds them and [OS.Runners] lists them
// after the teams. config/workflow_parity_test.go keeps workflow.Config,
// workflow.HumanReview and run.UserInputField and the keys in step.
//
// # Media
//
// [File.Build] opens the media store media_storage names — by default the
// directory media beside the SQLite database (the working directory with
// PostgreSQL), else a directory path or an s3://, gs://, azblob:// or
// file:// URL — bounded by max_upload_bytes (32 MiB) and
// max_upload_bytes_per_type, and gives it to every native agent and to
// [OS.Server] as [OS.Media]: uploads stream into it and runs keep references
// instead of bytes (package media). [OS.Close] closes it.
package config

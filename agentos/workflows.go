package agentos

import (
	"github.com/agnogo/agnogo/run"
)

// workflowSummary is a workflow as GET /workflows lists it (Agno's
// WorkflowResponse): its steps as step dicts, and the keys of Agno's
// workflow agents, factories, components and versions, which agnogo's
// declared workflows do not have.
func (o *OS) workflowSummary(r run.Runner) map[string]any {
	summary := map[string]any{
		"id": r.ID(), "name": r.Name(), "db_id": nil, "description": nil, "input_schema": nil, "steps": []map[string]any{},
		"agent": nil, "team": nil, "metadata": nil, "workflow_agent": false, "is_factory": false,
		"factory_input_schema": nil, "is_component": false, "current_version": nil, "stage": nil,
	}
	if o.cfg.Store != nil {
		summary["db_id"] = o.cfg.DBID
	}
	if d, ok := r.(interface{ Description() string }); ok && d.Description() != "" {
		summary["description"] = d.Description()
	}
	if s, ok := r.(interface{ StepDicts() []map[string]any }); ok {
		summary["steps"] = s.StepDicts()
	}
	if s, ok := r.(interface{ InputSchema() map[string]any }); ok && s.InputSchema() != nil {
		summary["input_schema"] = s.InputSchema()
	}
	return summary
}

package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/media"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/dburl"
	"github.com/agnogo/agnogo/team"
)

// buildTeams builds the file's teams into built, once its agents are: each
// after the teams among its members, on the agents' store. modelFor builds
// (or reuses) a configured model.
func (f *File) buildTeams(built *OS, store dburl.Store, opts BuildOptions, modelFor func(*Model, string) (model.Model, error)) error {
	for _, t := range f.Teams {
		built.TeamIDs = append(built.TeamIDs, t.ID)
	}
	for _, t := range teamOrder(f.Teams) {
		if t.ResolvedModel == nil {
			return f.teamErrorAt(t.Line, t, errors.New("no model: read the file with config.Load or config.Parse"))
		}
		m, err := modelFor(t.ResolvedModel, t.ID)
		if err != nil {
			return f.teamErrorAt(t.ResolvedModel.Line, t, err)
		}
		members := make([]run.Runner, 0, len(t.Members))
		for i, id := range t.Members {
			member, err := built.Runner(id)
			if err != nil {
				return f.teamErrorAt(t.memberLines[i], t, fmt.Errorf("member %q: %w", id, err))
			}
			members = append(members, member)
		}
		cfg, err := f.teamConfig(t, m, members, store, built.Media, opts)
		if err != nil {
			line := t.Line
			var toolsErr *toolsError
			if errors.As(err, &toolsErr) && toolsErr.line != 0 {
				line = toolsErr.line
			}
			return f.teamErrorAt(line, t, err)
		}
		built.Teams[t.ID], err = team.New(cfg)
		if err != nil {
			// team.New names the team itself: "team ID: …".
			return f.teamErrorAt(t.Line, t, errors.New(strings.TrimPrefix(err.Error(), "team "+t.ID+": ")))
		}
	}
	return nil
}

// teamErrorAt places a build failure of team t at a line of the file.
func (f *File) teamErrorAt(line int, t *Team, err error) error {
	if line == 0 {
		line = t.Line
	}
	return &Error{Source: f.Source, Line: line, Message: fmt.Sprintf("team %q: %v", t.ID, err)}
}

// teamConfig is the team.Config a team's keys describe, with its leader's
// model and its members built.
func (f *File) teamConfig(t *Team, m model.Model, members []run.Runner, store dburl.Store, mediaStore media.Store, opts BuildOptions) (team.Config, error) {
	tools, toolInstructions, err := buildTools(&Agent{Tools: t.Tools, ToolkitSettings: t.ToolkitSettings, ToolOptions: t.ToolOptions, Workspace: t.Workspace})
	if err != nil {
		return team.Config{}, err
	}
	instructions := t.Instructions
	for _, extra := range toolInstructions {
		instructions = strings.TrimSpace(instructions + "\n\n" + extra)
	}
	cfg := team.Config{
		ID:                       t.ID,
		Name:                     t.Name,
		Description:              t.Description,
		Role:                     t.Role,
		Model:                    m,
		Instructions:             instructions,
		Members:                  members,
		Mode:                     t.Mode,
		RespondDirectly:          t.RespondDirectly,
		DelegateToAllMembers:     t.DelegateToAllMembers,
		DetermineInputForMembers: new(t.DetermineInputForMembers),
		MaxIterations:            t.MaxIterations,
		StreamMemberEvents:       new(t.StreamMemberEvents),
		StoreMemberResponses:     t.StoreMemberResponses,
		MaxParallelMembers:       t.MaxParallelMembers,
		AddHistoryToContext:      t.AddHistoryToContext,
		NumHistoryRuns:           t.NumHistoryRuns,
		Tools:                    tools,
		ToolCallLimit:            t.ToolCallLimit,
		SessionState:             t.SessionState,
		MediaURLPolicy:           f.MediaURLPolicy(),
		Media:                    mediaStore,
		MaxModelMediaBytes:       t.MaxModelMediaBytes,
		OutputSchema:             t.OutputSchema,
		StoreEvents:              t.StoreEvents,
		Retries:                  t.Retries,
		DelayBetweenRetries:      t.DelayBetweenRetries,
		ExponentialBackoff:       t.ExponentialBackoff,
		Store:                    store,
		Prices:                   teamPrices(t),
		Logger:                   opts.Logger,
	}
	return cfg, nil
}

// teamPrices is the built-in price table with the price the file gives the
// leader's model, which wins.
func teamPrices(t *Team) agent.PriceTable {
	if t.ResolvedModel == nil || t.ResolvedModel.Prices == nil {
		return nil // the built-in table, shared
	}
	prices := agent.DefaultPrices()
	prices[t.ResolvedModel.ID] = *t.ResolvedModel.Prices
	return prices
}

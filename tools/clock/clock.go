// Package clock is the time toolkit: the current date and time in a time
// zone, and a time converted between zones, for a model that cannot know
// what time it is.
package clock

import (
	"context"
	"fmt"
	"time"

	"github.com/agnogo/agnogo/tool"
	"github.com/agnogo/agnogo/toolkit"
)

// The tools' names.
const (
	CurrentTimeName = "get_current_time"
	ConvertTimeName = "convert_time"
)

// Names lists the toolkit's tools, in order.
func Names() []string { return []string{CurrentTimeName, ConvertTimeName} }

type currentArgs struct {
	Timezone string `json:"timezone,omitempty" jsonschema:"an IANA time zone such as Europe/Paris; UTC when left out"`
}

type convertArgs struct {
	Time string `json:"time" jsonschema:"the time to convert, RFC 3339 (2026-12-02T15:04:05Z or with an offset)"`
	To   string `json:"to" jsonschema:"the IANA time zone to convert it to, such as America/New_York"`
}

type answer struct {
	Time     string `json:"time"`
	Timezone string `json:"timezone"`
	Weekday  string `json:"weekday"`
	Unix     int64  `json:"unix"`
}

func location(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: give an IANA name such as Europe/Paris or UTC", name)
	}
	return loc, nil
}

func answerOf(t time.Time) answer {
	return answer{Time: t.Format(time.RFC3339), Timezone: t.Location().String(), Weekday: t.Weekday().String(), Unix: t.Unix()}
}

// Tools returns the toolkit's tools; now is the clock (time.Now when nil).
func Tools(now func() time.Time) []tool.Tool {
	if now == nil {
		now = time.Now
	}
	return []tool.Tool{
		tool.MustNew(tool.Config{Name: CurrentTimeName, Description: "The current date and time in a time zone."},
			func(_ context.Context, a currentArgs) (answer, error) {
				loc, err := location(a.Timezone)
				if err != nil {
					return answer{}, err
				}
				return answerOf(now().In(loc)), nil
			}),
		tool.MustNew(tool.Config{Name: ConvertTimeName, Description: "Convert a time to another time zone."},
			func(_ context.Context, a convertArgs) (answer, error) {
				t, err := time.Parse(time.RFC3339, a.Time)
				if err != nil {
					return answer{}, fmt.Errorf("time %q: want RFC 3339, such as 2026-12-02T15:04:05Z", a.Time)
				}
				loc, err := location(a.To)
				if err != nil {
					return answer{}, err
				}
				return answerOf(t.In(loc)), nil
			}),
	}
}

// Settings are the time toolkit's settings: it has none of its own, only
// the keys every toolkit takes (toolkit.Options).
type Settings struct{}

// Definition declares the toolkit for config files, as time.
func Definition() toolkit.Definition {
	return toolkit.Define("time", "The current date and time in a time zone, and times converted between zones.",
		Names(), func(context.Context, Settings) (*toolkit.Toolkit, error) {
			return &toolkit.Toolkit{Name: "time", Tools: Tools(nil)}, nil
		})
}

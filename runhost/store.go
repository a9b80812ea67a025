package runhost

import "github.com/agnogo/agnogo/storage"

// Store is the store the run is kept in (nil without one): tools that
// read or write beside the run (the scheduler toolkit) use it.
func (r *Run) Store() storage.Store { return r.host.Store() }

package plan

import "slices"

// WithoutPlanEntry takes field's entry out of the plan's own table
// (planDimensions) until restore is called: a dimension then has only its
// results.Dimensions entry.
func WithoutPlanEntry(field string) (restore func()) {
	saved := planDimensions
	planDimensions = slices.DeleteFunc(slices.Clone(planDimensions), func(d planDimension) bool { return d.field == field })
	return func() { planDimensions = saved }
}

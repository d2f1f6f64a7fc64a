/* The injective template (elementwise, broadcast, transpose, copy): the
 * innermost loop split for the vector lanes and vectorized, the outer loops
 * fused until they feed the threads and run in parallel. */
#include "template_internal.h"

ingot_status_t template_injective_space(plan_t* p, uint32_t mask, ingot_schedule_space_t* space) {
  space_add_common(p, mask, space);
  static const int64_t k_whole[] = {0, 1};
  space_add(space, mask, SCHEDULE_KNOB_WHOLE_ROW, k_whole, 2, 1);
  return INGOT_OK;
}

ingot_status_t template_injective_plan(plan_t* p) { return plan_stages(p); }

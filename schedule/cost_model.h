/* The tuner's cost model: features of a scheduled kernel, and a model
 * trained on measured times that ranks candidate schedules.
 *
 * Features (ingot_cost_features) are read from a kernel's loop IR after
 * ingot_schedule_apply, and from the target description: a fixed-length
 * float vector, the same for the same function and target (no addresses,
 * no clocks). Its rows are listed, with what each means, in
 * schedule/cost_features.def; the index of a row is
 *   global row g:            g
 *   loop row f, level l:     INGOT_COST_GLOBAL_COUNT + l * INGOT_COST_LOOP_FIELDS + f
 *   buffer row f, buffer b:  INGOT_COST_GLOBAL_COUNT + INGOT_COST_LOOP_LEVELS * INGOT_COST_LOOP_FIELDS
 *                            + b * INGOT_COST_BUFFER_FIELDS + f
 * (ingot_cost_feature_index, ingot_cost_feature_name).
 *
 * The "main nest" is the path of loops down to the statement executed most
 * often (the first such, in body order): its levels are the loop rows (in a
 * nest deeper than INGOT_COST_LOOP_LEVELS, the outer LEVELS-1 levels and
 * the innermost one in the last slot), and
 * buffers' reuse is estimated along it. A buffer's footprint within the
 * innermost k loops of the main nest is the product of the extents of
 * those loops its index uses (at most the buffer's size); for each cache
 * level, the largest k whose footprint over all buffers fits in it gives
 * the reuse there: accesses per distinct element within those loops.
 *
 * The model (ingot_cost_model_t) is XGBoost's gradient-boosted trees with
 * a pairwise ranking objective (rank:pairwise): records are grouped per
 * workload, and only the order of times within a group is learned (times of
 * different workloads are never compared). Scores: higher means faster.
 * It trains on one thread and is deterministic for the same records. */
#ifndef INGOT_COST_MODEL_H_
#define INGOT_COST_MODEL_H_

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "lower/ir.h"
#include "target/target.h"

#define INGOT_COST_LOOP_LEVELS 8
#define INGOT_COST_BUFFERS 4

enum {
#define INGOT_COST_GLOBAL(id, doc) INGOT_COST_GLOBAL_##id,
#define INGOT_COST_LOOP(id, doc)
#define INGOT_COST_BUFFER(id, doc)
#include "schedule/cost_features.def"
  INGOT_COST_GLOBAL_COUNT
};
enum {
#define INGOT_COST_GLOBAL(id, doc)
#define INGOT_COST_LOOP(id, doc) INGOT_COST_LOOP_##id,
#define INGOT_COST_BUFFER(id, doc)
#include "schedule/cost_features.def"
  INGOT_COST_LOOP_FIELDS
};
enum {
#define INGOT_COST_GLOBAL(id, doc)
#define INGOT_COST_LOOP(id, doc)
#define INGOT_COST_BUFFER(id, doc) INGOT_COST_BUFFER_##id,
#include "schedule/cost_features.def"
  INGOT_COST_BUFFER_FIELDS
};

#define INGOT_COST_FEATURE_COUNT                                                      \
  (INGOT_COST_GLOBAL_COUNT + INGOT_COST_LOOP_LEVELS * INGOT_COST_LOOP_FIELDS +       \
   INGOT_COST_BUFFERS * INGOT_COST_BUFFER_FIELDS)

/* Index of a loop row at a level, of a buffer row for a buffer. */
#define INGOT_COST_LOOP_INDEX(level, field) \
  (INGOT_COST_GLOBAL_COUNT + (level) * INGOT_COST_LOOP_FIELDS + (field))
#define INGOT_COST_BUFFER_INDEX(buffer, field)                                         \
  (INGOT_COST_GLOBAL_COUNT + INGOT_COST_LOOP_LEVELS * INGOT_COST_LOOP_FIELDS +        \
   (buffer) * INGOT_COST_BUFFER_FIELDS + (field))

/* Fills out_features[INGOT_COST_FEATURE_COUNT] for a (scheduled) function
 * on a target. Fails on a function without a body. */
ingot_status_t ingot_cost_features(const ingot_ir_func_t* func, const ingot_target_t* target,
                                   float* out_features);
/* Writes the name of feature `index` ("flops", "loop2.extent",
 * "buffer0.reuse_l1") into buf; "" out of range. */
void ingot_cost_feature_name(uint32_t index, char* buf, size_t size);

typedef struct ingot_cost_model_t ingot_cost_model_t;

/* An empty, untrained model. */
ingot_status_t ingot_cost_model_create(ingot_cost_model_t** out_model);
void ingot_cost_model_destroy(ingot_cost_model_t* model);

/* Adds one measured record: features (INGOT_COST_FEATURE_COUNT floats) of a
 * schedule of workload `group` (the caller's number for a workload) and its
 * time. A time that is not positive and finite is refused. */
ingot_status_t ingot_cost_model_add(ingot_cost_model_t* model, uint32_t group, const float* features,
                                    double time_ms);
uint32_t ingot_cost_model_record_count(const ingot_cost_model_t* model);

/* Trains a new booster on every record added (replacing any loaded or
 * trained one) for `rounds` boosting rounds (0: 100). Within a group, a
 * record's relevance is its group's best time over its own (1 for the
 * fastest). Needs at least one group with two different times. */
ingot_status_t ingot_cost_model_train(ingot_cost_model_t* model, uint32_t rounds);
/* True once trained or loaded. */
bool ingot_cost_model_trained(const ingot_cost_model_t* model);

/* Scores `count` candidates (row-major, INGOT_COST_FEATURE_COUNT each):
 * higher is predicted faster; only the order within one workload means
 * anything. Fails on a model neither trained nor loaded. */
ingot_status_t ingot_cost_model_predict(const ingot_cost_model_t* model, const float* features,
                                        uint32_t count, float* out_scores);

/* Pairwise ranking accuracy on records (groups[i], features row i,
 * times_ms[i]): of the pairs in the same group whose times differ, the
 * fraction the model orders as the times do (a tie in score counts half).
 * *out_pairs (may be NULL) gets the number of such pairs; with none,
 * *out_accuracy is 0. */
ingot_status_t ingot_cost_model_accuracy(const ingot_cost_model_t* model, const uint32_t* groups,
                                         const float* features, const double* times_ms, uint32_t count,
                                         double* out_accuracy, uint64_t* out_pairs);

/* Saves the trained booster (not the records): XGBoost's JSON when the path
 * ends in ".json", its UBJSON otherwise (".ubj"). */
ingot_status_t ingot_cost_model_save(const ingot_cost_model_t* model, const char* path);
/* Loads a saved booster into a new model (no records). Fails naming the
 * path when it cannot be read, is not a model, or was saved with another
 * number of features. */
ingot_status_t ingot_cost_model_load(const char* path, ingot_cost_model_t** out_model);

#endif /* INGOT_COST_MODEL_H_ */

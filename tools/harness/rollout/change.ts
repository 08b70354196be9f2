// The workflow change build B of the rollout test carries: a new first step of the order workflow.

/** The patch id B's order workflow records when it takes the new step. */
export const ROLLOUT_CHANGE = 'rollout-test-new-first-step';
/** The new step: a timer, so that it is a command in the history a replay must match. */
export const NEW_STEP_MS = 10;

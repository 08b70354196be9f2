// The service's timings in test mode: short enough that no test or tool sleeps through production
// values, long enough that a loaded machine does not time out by itself. Every test and tool runs
// with TEST_TIMINGS; a tool that needs a different value says which and why, as an override below.

/** The settings (as environment variables) that integration tests run the service with. */
export const TEST_TIMINGS = {
  RETRY_MAX_ATTEMPTS: '3',
  RETRY_INITIAL_INTERVAL_MS: '100',
  RETRY_MAX_INTERVAL_MS: '1000',
  DB_STATEMENT_TIMEOUT_MS: '1500',
  ACTIVITY_START_TO_CLOSE_MS: '4000',
  ACTIVITY_SCHEDULE_TO_CLOSE_MS: '30000',
  COMPENSATION_DECISION_TIMEOUT_MS: '120000',
} as const;

export type Timings = Record<keyof typeof TEST_TIMINGS, string> & Record<string, string>;

/** The explorer's: each step of a story waits for its outcome, so failures and windows end in seconds. */
export const EXPLORER_TIMINGS: Timings = {
  ...TEST_TIMINGS,
  // Retries spaced as the explorer's stories were written and shrunk against.
  RETRY_INITIAL_INTERVAL_MS: '200',
  // A write or delivery that cannot succeed gives up within one step.
  ACTIVITY_START_TO_CLOSE_MS: '3000',
  ACTIVITY_SCHEDULE_TO_CLOSE_MS: '8000',
  // Below the shorter start-to-close, as the configuration requires.
  DOWNSTREAM_TIMEOUT_MS: '1500',
  // Short enough for the model's `window-passes` step to wait it out.
  COMPENSATION_DECISION_TIMEOUT_MS: '20000',
  // Well above the 2 s the explorer holds Temporal's answers back, so a start that is also slowed by
  // a loaded machine (the suite runs other files beside the explorer) still succeeds.
  WEBHOOK_START_TIMEOUT_MS: '6000',
  // An MCP submit answers within a step even when the write is still running.
  MCP_SUBMIT_WAIT_MS: '5000',
};

/** The chaos run's: retries spaced to outlive its restarts, and only its operator decides. */
export const CHAOS_TIMINGS: Timings = {
  ...TEST_TIMINGS,
  // Three attempts span a Temporal or PostgreSQL restart (a pause of 0.5–2 s plus start-up).
  RETRY_INITIAL_INTERVAL_MS: '1000',
  RETRY_MAX_INTERVAL_MS: '4000',
  // A downstream that hangs is given up on well within the activity's start-to-close.
  DOWNSTREAM_TIMEOUT_MS: '2000',
  // The run drains by deciding every compensation itself; no window may run out first.
  COMPENSATION_DECISION_TIMEOUT_MS: '3600000',
};

// The engine floor's task queue, shared by its edge, its worker and the benchmark.
export const FLOOR_TASK_QUEUE = 'bench-floor';

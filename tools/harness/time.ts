// The one plain pause the tools and tests share (pacing, polling, a fault's duration).
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

// The chaos run's progress lines, stamped with the time of day.
export const log = (message: string) => console.log(`[chaos ${new Date().toISOString().slice(11, 23)}] ${message}`);

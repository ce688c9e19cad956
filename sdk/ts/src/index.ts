export * from "./client.js";
export * from "./transport.js";
export {
  type CancelOnOption,
  dstOf,
  schedulePolicyOf,
  type BackfilledOccurrenceResult,
  type DelayOptions,
  type DelayResult,
  type DelaySpec,
  type DelayWhen,
  type DstOptions,
  type OverdueBound,
  type PauseOptions,
  type ScheduleOptions,
  type SchedulePolicyOptions,
  type TimerChangeOptions,
  type TimerKindName,
  type TimerWhen,
} from "./time-requests.js";
export { expectedVersionOf, type ExpectedVersion, type ReadStreamOptions, type StreamEntry } from "./streams.js";
export * from "./executor.js";
export * from "./action.js";
export * from "./work.js";
export * from "./plugin.js";
export { sdkVersion } from "./version.js";
export * from "./gen/chronolog/v1/event_pb.js";
export * from "./gen/chronolog/v1/log_pb.js";
export * from "./gen/chronolog/v1/plugin_pb.js";
export * from "./gen/chronolog/v1/executor_pb.js";

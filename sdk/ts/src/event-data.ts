import type { JsonObject } from "@bufbuild/protobuf";
import type { Event } from "./gen/chronolog/v1/event_pb.js";

const decoder = new TextDecoder();

/**
 * `event` with its data in `data` as the API's users read it: data sent as JSON text
 * (Event.data_json, asked for by Watch and executors) is parsed into `data` and `dataJson`
 * emptied. Changes and returns `event`.
 */
export function withData(event: Event): Event {
  if (event.dataJson.length > 0) {
    event.data = JSON.parse(decoder.decode(event.dataJson)) as JsonObject;
    event.dataJson = new Uint8Array(0);
  }
  return event;
}

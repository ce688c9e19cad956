// gRPC server reflection (grpc.reflection.v1 and v1alpha), for grpcurl, buf curl,
// Postman and friends. Both versions share one implementation.

import { Code, type ConnectRouter } from "@connectrpc/connect";
import { toBinary, type DescEnum, type DescExtension, type DescFile, type DescMessage, type DescService } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { file_google_rpc_error_details } from "@chronolog/sdk/gen/google/rpc/error_details_pb";
import * as v1 from "@chronolog/sdk/gen/grpc/reflection/v1/reflection_pb";
import * as v1alpha from "@chronolog/sdk/gen/grpc/reflection/v1alpha/reflection_pb";

/** What both reflection versions' requests look like. */
interface ReflectionRequest {
  host: string;
  messageRequest:
    | { case: "fileByFilename" | "fileContainingSymbol" | "allExtensionNumbersOfType" | "listServices"; value: string }
    | { case: "fileContainingExtension"; value: { containingType: string; extensionNumber: number } }
    | { case: undefined; value?: undefined };
}

/** The `message_response` oneof of both reflection versions, as init shape. */
type ReflectionAnswer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: "allExtensionNumbersResponse"; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

/** Files, symbols and extensions reachable from a set of services. */
interface Index {
  services: string[];
  /** by proto file name, e.g. "chronolog/v1/log.proto" */
  files: Map<string, DescFile>;
  /** by fully-qualified name without leading dot: messages, enums, enum values, fields, oneofs, services, methods, extensions */
  symbols: Map<string, DescFile>;
  /** by extendee type name, then field number */
  extensions: Map<string, Map<number, DescFile>>;
}

/**
 * Registers grpc.reflection.v1.ServerReflection and grpc.reflection.v1alpha.ServerReflection.
 *
 * Served: the files of `services`, of both reflection services and of every service
 * registered on `router` (looked up at the first reflection call, so register
 * reflection at any point of the routes function), plus all their transitive imports,
 * plus google/rpc/error_details.proto: errors carry its ErrorInfo and BadRequest in
 * their status details, and grpcurl resolves those types through reflection.
 * list_services lists those services; file_by_filename, file_containing_symbol and
 * file_containing_extension answer the file (serialized FileDescriptorProto) followed by
 * its imports not yet sent on this stream; all_extension_numbers_of_type answers the
 * known extension numbers (none for our files). Unknown names get an error_response
 * with code NOT_FOUND (5); an empty request gets INVALID_ARGUMENT (3).
 */
export function registerReflection(router: ConnectRouter, services: DescService[]): void {
  let index: Index | undefined;
  const getIndex = (): Index => {
    index ??= buildIndex([...services, v1.ServerReflection, v1alpha.ServerReflection, ...router.handlers.map((h) => h.service)]);
    addFile(index, file_google_rpc_error_details);
    return index;
  };

  async function* serve(requests: AsyncIterable<ReflectionRequest>) {
    const sent = new Set<string>();
    for await (const request of requests) {
      yield {
        validHost: request.host,
        originalRequest: request,
        messageResponse: answer(getIndex(), request, sent),
      };
    }
  }

  router.service(v1.ServerReflection, {
    serverReflectionInfo: (requests) => serve(requests),
  });
  router.service(v1alpha.ServerReflection, {
    serverReflectionInfo: (requests) => serve(requests),
  });
}

/** Answers one reflection request; `sent` holds file names already sent on this stream. */
function answer(index: Index, request: ReflectionRequest, sent: Set<string>): ReflectionAnswer {
  const req = request.messageRequest;
  switch (req.case) {
    case "listServices":
      return { case: "listServicesResponse", value: { service: index.services.map((name) => ({ name })) } };
    case "fileByFilename": {
      const file = index.files.get(req.value);
      return file ? filesAnswer(file, sent) : notFound(`file ${JSON.stringify(req.value)} not found`);
    }
    case "fileContainingSymbol": {
      const file = index.symbols.get(req.value.replace(/^\./, ""));
      return file ? filesAnswer(file, sent) : notFound(`symbol ${JSON.stringify(req.value)} not found`);
    }
    case "fileContainingExtension": {
      const { containingType, extensionNumber } = req.value;
      const file = index.extensions.get(containingType.replace(/^\./, ""))?.get(extensionNumber);
      return file ? filesAnswer(file, sent) : notFound(`extension ${extensionNumber} of ${JSON.stringify(containingType)} not found`);
    }
    case "allExtensionNumbersOfType": {
      const typeName = req.value.replace(/^\./, "");
      if (!index.symbols.has(typeName)) return notFound(`type ${JSON.stringify(req.value)} not found`);
      const numbers = [...(index.extensions.get(typeName)?.keys() ?? [])].sort((a, b) => a - b);
      return { case: "allExtensionNumbersResponse", value: { baseTypeName: typeName, extensionNumber: numbers } };
    }
    default:
      return {
        case: "errorResponse",
        value: { errorCode: Code.InvalidArgument, errorMessage: "empty reflection request" },
      };
  }
}

function notFound(message: string): ReflectionAnswer {
  return { case: "errorResponse", value: { errorCode: Code.NotFound, errorMessage: message } };
}

/**
 * The file itself (always), then its transitive imports breadth-first, each
 * import only if not yet sent on the stream (as grpc-go does).
 */
function filesAnswer(file: DescFile, sent: Set<string>): ReflectionAnswer {
  const out: Uint8Array[] = [];
  const queue = [file];
  const seenNow = new Set<string>();
  for (let f = queue.shift(); f; f = queue.shift()) {
    const name = fileName(f);
    if (seenNow.has(name)) continue;
    seenNow.add(name);
    if (f === file || !sent.has(name)) {
      sent.add(name);
      out.push(toBinary(FileDescriptorProtoSchema, f.proto));
    }
    queue.push(...f.dependencies);
  }
  return { case: "fileDescriptorResponse", value: { fileDescriptorProto: out } };
}

/** The proto file name with suffix ("a/b.proto"); DescFile.name lacks ".proto". */
function fileName(file: DescFile): string {
  return file.proto.name || `${file.name}.proto`;
}

function buildIndex(services: DescService[]): Index {
  const index: Index = { services: [], files: new Map(), symbols: new Map(), extensions: new Map() };
  const serviceNames = new Set<string>();
  for (const service of services) {
    serviceNames.add(service.typeName);
    addFile(index, service.file);
  }
  index.services = [...serviceNames].sort();
  return index;
}

function addFile(index: Index, file: DescFile): void {
  const name = fileName(file);
  if (index.files.has(name)) return;
  index.files.set(name, file);
  const sym = (fullName: string): void => void index.symbols.set(fullName, file);
  const pkg = file.proto.package;
  const addEnum = (e: DescEnum, scope: string): void => {
    sym(e.typeName);
    for (const value of e.values) sym(scope ? `${scope}.${value.name}` : value.name);
  };
  const addExtension = (ext: DescExtension): void => {
    sym(ext.typeName);
    let byNumber = index.extensions.get(ext.extendee.typeName);
    if (!byNumber) index.extensions.set(ext.extendee.typeName, (byNumber = new Map()));
    byNumber.set(ext.number, file);
  };
  const addMessage = (m: DescMessage): void => {
    sym(m.typeName);
    for (const field of m.fields) sym(`${m.typeName}.${field.name}`);
    for (const oneof of m.oneofs) sym(`${m.typeName}.${oneof.name}`);
    for (const nested of m.nestedMessages) addMessage(nested);
    for (const e of m.nestedEnums) addEnum(e, m.typeName);
    for (const ext of m.nestedExtensions) addExtension(ext);
  };
  for (const m of file.messages) addMessage(m);
  for (const e of file.enums) addEnum(e, pkg);
  for (const ext of file.extensions) addExtension(ext);
  for (const service of file.services) {
    sym(service.typeName);
    for (const method of service.methods) sym(`${service.typeName}.${method.name}`);
  }
  for (const dep of file.dependencies) addFile(index, dep);
}

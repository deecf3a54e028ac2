/// The JSON Schema (draft 2020-12) of scenario files, so editors complete and check them
/// (`# yaml-language-server: $schema=…`).
///
/// Its one source is `stampede.schema.json` beside this file, compiled into the binary (an
/// installed `stampede` has no resource folder to look in); `stampede schema` prints it and
/// docs/stampede.schema.json is a copy that a test keeps byte-identical. It says what a schema
/// can: names, types, enums and ranges. The loader (`stampede validate`) remains the judge of
/// everything else: cross-field rules, URLs, templates, files.
public enum ScenarioSchema {
    /// The schema as JSON text, ending in a newline.
    public static let text = String(decoding: PackageResources.stampede_schema_json, as: UTF8.self)
}

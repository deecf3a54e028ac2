import Testing
import StampedeTestSupport
@testable import StampedeWire

/// Inputs the fuzz targets (Fuzz/, README "Fuzzing") found, as byte fixtures; each is also kept
/// in the target's seed corpus under Tests/Fuzz/corpus/.
struct FuzzRegressionTests {
    /// sse, crash-67bee0e8: a lone data line followed by other lines whose retained bytes pass
    /// the line limit exactly when the LF of the last line's CRLF is counted. Fed whole, the
    /// parser gave up zero copy (assembled event); split between that CR and LF, it checked
    /// the limit without the LF and kept zero copy. Same data, but the choice must not depend
    /// on splitting (SSEParser.swift, the skipLF branch of `next`).
    @Test func sseZeroCopyDoesNotDependOnACRLFSplit() {
        let input = hex("""
            64 61 74 61 3a 63 69 65 6b 74 20 65 76 65 6e 74 3a 64 ef bb bf 61 3a 0d
            20 6c 69 6e 65 20 6f 6e 65 0a 20 26 69 6e 65 20 6f 3a 20 6c 6e 21 65 0d
            0a 0a
            """)
        let parser = SSEParser(maxEventBytes: 40, maxLineBytes: 48)
        let whole = sseRun(input, parser: parser)
        #expect(whole.events == ["ciekt event:d\u{FEFF}a:"] && whole.assembled == 1 && whole.error == nil)
        // The fuzzer's split: the third line's CR ends a read, its LF starts the next.
        let split = sseRun(input, cuts: [27, 33, 48, 49], parser: parser)
        #expect(split.events == whole.events && split.zeroCopy == whole.zeroCopy && split.assembled == whole.assembled)
        expectSSESplitInvariant(input, parser: parser)
    }
}

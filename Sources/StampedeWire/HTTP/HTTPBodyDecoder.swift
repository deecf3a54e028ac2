/// De-framing of a message body: Content-Length countdown, chunked decoding (RFC 9112 §7.1),
/// or read-until-close. Chunk-size lines are consumed byte by byte as they arrive, so a size
/// line split across buffers is never rescanned; data is reported as ranges of the input.
struct HTTPBodyDecoder: Sendable {
    enum State: Sendable, Equatable {
        case length(Int)
        case untilClose
        case chunkSize
        case chunkExtension
        case chunkSizeLF
        case chunkData(Int)
        case chunkDataCR
        case chunkDataLF
        case trailerLineStart
        case trailerLine
        case trailerEndLF
        case done
    }

    enum Step: Sendable, Equatable {
        case body(Range<Int>)
        case end
        case needMore
        case failed(HTTPParseError)
    }

    var state: State = .done
    var chunkSize = 0
    var sawDigit = false
    /// Bytes of the current chunk-size line, or of the whole trailer section.
    var lineBytes = 0

    mutating func start(_ framing: HTTPBodyFraming) {
        chunkSize = 0
        sawDigit = false
        lineBytes = 0
        switch framing {
        case .none: state = .done
        case .length(let n): state = .length(n)
        case .chunked: state = .chunkSize
        case .untilClose: state = .untilClose
        }
    }

    /// Advances over `buf[from...]`; returns what happened and the offset up to which the
    /// input is used up.
    mutating func step(_ buf: UnsafeRawBufferPointer, from: Int, maxChunkLineBytes: Int, maxTrailerBytes: Int) -> (Step, Int) {
        let n = buf.count
        var i = from
        while true {
            switch state {
            case .done:
                return (.end, i)
            case .length(let remaining):
                if remaining == 0 {
                    state = .done
                    return (.end, i)
                }
                if i == n { return (.needMore, i) }
                let k = min(remaining, n - i)
                state = .length(remaining - k)
                return (.body(i..<(i + k)), i + k)
            case .untilClose:
                if i == n { return (.needMore, i) }
                return (.body(i..<n), n)
            case .chunkData(let remaining):
                if i == n { return (.needMore, i) }
                let k = min(remaining, n - i)
                state = k == remaining ? .chunkDataCR : .chunkData(remaining - k)
                return (.body(i..<(i + k)), i + k)
            default:
                break
            }
            if i == n { return (.needMore, i) }
            let b = buf[i]
            i += 1
            switch state {
            case .chunkSize:
                lineBytes += 1
                if let d = HTTPBytes.hexValue(b) {
                    if chunkSize > Int.max >> 4 { return fail(.invalidChunkSize, i) }
                    chunkSize = chunkSize << 4 | d
                    sawDigit = true
                } else if b == HTTPBytes.semicolon || HTTPBytes.isOWS(b) {
                    // Extensions (and the BWS before them) are ignored: nothing we speak uses them.
                    guard sawDigit else { return fail(.invalidChunkSize, i) }
                    state = .chunkExtension
                } else if b == HTTPBytes.cr {
                    guard sawDigit else { return fail(.invalidChunkSize, i) }
                    state = .chunkSizeLF
                } else if b == HTTPBytes.lf {
                    guard sawDigit else { return fail(.invalidChunkSize, i) }
                    finishSizeLine()
                } else {
                    return fail(.invalidChunkSize, i)
                }
                if lineBytes > maxChunkLineBytes { return fail(.chunkLineTooLong, i) }
            case .chunkExtension:
                lineBytes += 1
                if b == HTTPBytes.cr {
                    state = .chunkSizeLF
                } else if b == HTTPBytes.lf {
                    finishSizeLine()
                } else if lineBytes > maxChunkLineBytes {
                    return fail(.chunkLineTooLong, i)
                }
            case .chunkSizeLF:
                guard b == HTTPBytes.lf else { return fail(.invalidChunkSize, i) }
                finishSizeLine()
            case .chunkDataCR:
                if b == HTTPBytes.cr {
                    state = .chunkDataLF
                } else if b == HTTPBytes.lf {
                    state = .chunkSize // bare LF tolerated as a line end (RFC 9112 §2.2)
                } else {
                    return fail(.malformedChunk, i)
                }
            case .chunkDataLF:
                guard b == HTTPBytes.lf else { return fail(.malformedChunk, i) }
                state = .chunkSize
            case .trailerLineStart, .trailerLine, .trailerEndLF:
                // Trailer fields are skipped unread; only their size is bounded.
                lineBytes += 1
                if lineBytes > maxTrailerBytes { return fail(.trailersTooLarge, i) }
                switch state {
                case .trailerLineStart:
                    if b == HTTPBytes.cr {
                        state = .trailerEndLF
                    } else if b == HTTPBytes.lf {
                        state = .done
                        return (.end, i)
                    } else {
                        state = .trailerLine
                    }
                case .trailerLine:
                    if b == HTTPBytes.lf { state = .trailerLineStart }
                default:
                    guard b == HTTPBytes.lf else { return fail(.malformedChunk, i) }
                    state = .done
                    return (.end, i)
                }
            default:
                return fail(.malformedChunk, i)
            }
        }
    }

    private mutating func finishSizeLine() {
        state = chunkSize == 0 ? .trailerLineStart : .chunkData(chunkSize)
        chunkSize = 0
        sawDigit = false
        lineBytes = 0
    }

    private func fail(_ error: HTTPParseError, _ at: Int) -> (Step, Int) { (.failed(error), at) }

    /// Whether the stream may end here without losing data (a read-until-close body).
    var endsAtClose: Bool { state == .untilClose || state == .done }
}

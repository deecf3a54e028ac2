import StampedeLoop

/// One broadcast, encoded at most once per wire format and copied to every receiver.
final class HubBroadcast {
    let json = ByteBuffer()
    let messagePack = ByteBuffer()
    let webSocketText = ByteBuffer()
    let webSocketBinary = ByteBuffer()
    let sse = ByteBuffer()
    var hasJSON = false, hasMessagePack = false, hasWebSocketText = false, hasWebSocketBinary = false, hasSSE = false
    var sseChunkHeader = 0
    var failed = false

    func reset() {
        json.clear()
        messagePack.clear()
        webSocketText.clear()
        webSocketBinary.clear()
        sse.clear()
        hasJSON = false; hasMessagePack = false; hasWebSocketText = false; hasWebSocketBinary = false; hasSSE = false
        failed = false
    }
}

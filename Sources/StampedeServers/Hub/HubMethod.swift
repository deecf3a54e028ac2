
/// The methods of the test hub (matched ignoring ASCII case).
enum HubMethod {
    case sendMessage, echo, joinGroup, leaveGroup, sendToGroup, counter, askClient, upload

    init?(_ name: UnsafeRawBufferPointer) {
        switch name.count {
        case 4 where HubBytes.equalsIgnoringCase(name, "echo"): self = .echo
        case 6 where HubBytes.equalsIgnoringCase(name, "upload"): self = .upload
        case 7 where HubBytes.equalsIgnoringCase(name, "counter"): self = .counter
        case 9 where HubBytes.equalsIgnoringCase(name, "joingroup"): self = .joinGroup
        case 9 where HubBytes.equalsIgnoringCase(name, "askclient"): self = .askClient
        case 10 where HubBytes.equalsIgnoringCase(name, "leavegroup"): self = .leaveGroup
        case 11 where HubBytes.equalsIgnoringCase(name, "sendmessage"): self = .sendMessage
        case 11 where HubBytes.equalsIgnoringCase(name, "sendtogroup"): self = .sendToGroup
        default: return nil
        }
    }

    var name: String {
        switch self {
        case .sendMessage: "SendMessage"
        case .echo: "Echo"
        case .joinGroup: "JoinGroup"
        case .leaveGroup: "LeaveGroup"
        case .sendToGroup: "SendToGroup"
        case .counter: "Counter"
        case .askClient: "AskClient"
        case .upload: "Upload"
        }
    }

    var isStreaming: Bool { self == .counter }
}

"""What an agent reaches beyond its model: tool calls through the gateway (`client`), the tools the
gateway offers it (`offered`), the runner's own tools (`find_tools`, `request_action`,
`event_history`), and apps' sampling requests answered by the agent's model (`sampling`)."""

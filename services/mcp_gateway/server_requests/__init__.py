"""What an app asks back during a tool call, and who answers: elicitation (the user of the call's
event, in the chat or at the edge), sampling (the calling agent's model), the input-required loop
of stateless apps; `callbacks` binds them to each session."""

// Command switchyard is an OpenAI-compatible LLM gateway that routes each
// request only to the targets its matching rule names.
package main

func main() {}

// Package localbackend is the server.Backend of `tandem serve`: it hosts the
// embedded engine (package backend/local) behind the Tinker protocol.
//
// Every trainer it makes trains a fresh LoRA adapter on its own copy of a
// named base model and saves into one shared checkpoint.Store: save_weights
// writes a full training state (adapter and optimizer), and every
// save_weights_for_sampler version is persisted as a PEFT checkpoint as well
// as put on an in-memory shelf. Samplers load adapters from that shelf when
// the trainer is in the same process (role both) and from the store folder
// otherwise, so a sampler process started on the same folder as a trainer
// process serves what the trainer publishes — the weight sync across
// processes is the checkpoint folder and its atomic renames.
package localbackend
